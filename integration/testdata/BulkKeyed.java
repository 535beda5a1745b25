import java.sql.*;

// Connector/J batch of N INSERTs with the key as a placeholder: rows with
// i % 3 == 0 bind an explicit key (1,000,000 + i), the others NULL (the
// proxy fills them), and a nullable INT bound NULL on odd rows. Prints the
// time the batch took.
public class BulkKeyed {
    public static void main(String[] a) throws Exception {
        String url = a[0];
        String table = a[1];
        int n = Integer.parseInt(a[2]);
        try (Connection c = DriverManager.getConnection(url)) {
            try (PreparedStatement ps = c.prepareStatement(
                    "INSERT INTO " + table + " (id, v, n) VALUES (?, ?, ?)")) {
                for (int i = 0; i < n; i++) {
                    if (i % 3 == 0) {
                        ps.setLong(1, 1_000_000L + i);
                    } else {
                        ps.setNull(1, Types.BIGINT);
                    }
                    ps.setString(2, "row" + i);
                    if (i % 2 == 1) {
                        ps.setNull(3, Types.INTEGER);
                    } else {
                        ps.setInt(3, i);
                    }
                    ps.addBatch();
                }
                long t0 = System.nanoTime();
                ps.executeBatch();
                long t1 = System.nanoTime();
                System.out.println("ms " + (t1 - t0) / 1_000_000);
            }
        }
    }
}
