import java.sql.*;

// Connector/J batch of N INSERTs into a table whose key the proxy fills:
// with useBulkStmts (Connector/J's default against MariaDB) the batch goes
// as one COM_STMT_BULK_EXECUTE. Prints the generated keys the driver
// reports, one per line, then the time the batch took.
public class BulkKeys {
    public static void main(String[] a) throws Exception {
        String url = a[0];
        String table = a[1];
        int n = Integer.parseInt(a[2]);
        try (Connection c = DriverManager.getConnection(url)) {
            try (PreparedStatement ps = c.prepareStatement(
                    "INSERT INTO " + table + " (v) VALUES (?)", Statement.RETURN_GENERATED_KEYS)) {
                for (int i = 0; i < n; i++) {
                    ps.setString(1, "row" + i);
                    ps.addBatch();
                }
                long t0 = System.nanoTime();
                ps.executeBatch();
                long t1 = System.nanoTime();
                StringBuilder sb = new StringBuilder();
                try (ResultSet rs = ps.getGeneratedKeys()) {
                    while (rs.next()) {
                        sb.append(rs.getLong(1)).append('\n');
                    }
                }
                System.out.print(sb);
                System.out.println("ms " + (t1 - t0) / 1_000_000);
            }
        }
    }
}
