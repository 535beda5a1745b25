import java.sql.*;

// Connector/J batch of N INSERTs (one COM_STMT_BULK_EXECUTE with
// useBulkStmts) into a table whose key column is at its end: prints
// "error <code> <sqlstate>" for the error the batch got, or "ok".
public class BulkEnd {
    public static void main(String[] a) throws Exception {
        String url = a[0];
        String table = a[1];
        int n = Integer.parseInt(a[2]);
        try (Connection c = DriverManager.getConnection(url)) {
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + table + " (b, u) VALUES (?, ?)")) {
                for (int i = 0; i < n; i++) {
                    ps.setString(1, "bulk" + i);
                    ps.setInt(2, 1000 + i);
                    ps.addBatch();
                }
                try {
                    ps.executeBatch();
                    System.out.println("ok");
                } catch (SQLException e) {
                    System.out.println("error " + e.getErrorCode() + " " + e.getSQLState());
                }
            }
        }
    }
}
