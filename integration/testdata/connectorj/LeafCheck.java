import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * MariaDB Connector/J through leafproxy, driven by
 * integration/clients_connectorj_test.go. Prints one JSON object on its last
 * line; the Go test judges what it observed.
 *
 * <p>Usage: LeafCheck PROXY_HOST:PORT DIRECT_HOST:PORT BATCH_ROWS
 */
public class LeafCheck {
  static String proxy, direct;
  static final StringBuilder out = new StringBuilder("{");

  public static void main(String[] args) throws Exception {
    proxy = args[0];
    direct = args[1];
    int rows = Integer.parseInt(args[2]);
    try (Connection c = app("")) {
      put("driver", c.getMetaData().getDriverVersion());
      basics(c);
    }
    cancel();
    batch("b_direct", true, rows);
    batch("b_proxy", false, rows);
    ruleBatch("r_plain", false, true, 200);
    ruleBatch("r_bulkkeys", true, true, 200);
    ruleBatch("r_bulk", true, false, 200);
    out.setLength(out.length() - 1);
    out.append('}');
    System.out.println(out);
    System.exit(0);
  }

  static Connection app(String opts) throws SQLException {
    return DriverManager.getConnection(
        "jdbc:mariadb://" + proxy + "/jdb?user=app&password=secret&connectTimeout=5000" + opts);
  }

  static Connection root(String opts) throws SQLException {
    return DriverManager.getConnection(
        "jdbc:mariadb://" + direct + "/jdb?user=root&connectTimeout=5000" + opts);
  }

  // Plain queries: text, client-side and server-side prepared.
  static void basics(Connection c) throws SQLException {
    try (Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT DATABASE(), CONCAT('a', 'b'), 1 + 1")) {
      rs.next();
      put("basicText", rs.getString(1) + "|" + rs.getString(2) + "|" + rs.getInt(3));
    }
    try (PreparedStatement ps = c.prepareStatement("SELECT ? * 2, CONCAT(?, '!')")) {
      ps.setInt(1, 21);
      ps.setString(2, "hi");
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        put("basicPrepared", rs.getInt(1) + "|" + rs.getString(2));
      }
    }
    // Compression on the client leg (useCompression): a result larger than
    // one compressed packet.
    try (Connection z = app("&useCompression=true");
        Statement st = z.createStatement();
        ResultSet rs = st.executeQuery("SELECT REPEAT('z', 100000), 'end'")) {
      rs.next();
      put("compressed", rs.getString(1).length() + "|" + rs.getString(2));
    }
    try (Connection s = app("&useServerPrepStmts=true");
        PreparedStatement ps = s.prepareStatement("SELECT ? * 2, CONCAT(?, '!')")) {
      ps.setInt(1, 21);
      ps.setString(2, "hi");
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        put("basicServerPrepared", rs.getInt(1) + "|" + rs.getString(2));
      }
    }
  }

  // Statement.cancel() on SELECT SLEEP(30) (Connector/J sends
  // KILL QUERY <greeting id> on a new connection) while a proxy session and
  // a direct session sleep 3 s: only the cancelled statement stops.
  static void cancel() throws Exception {
    ExecutorService ex = Executors.newCachedThreadPool();
    Future<String> byProxy = ex.submit(() -> sleep(app(""), 3));
    Future<String> byDirect = ex.submit(() -> sleep(root(""), 3));
    Connection victim = app("");
    Statement st = victim.createStatement();
    Future<String> v =
        ex.submit(
            () -> {
              long t0 = System.nanoTime();
              try (ResultSet rs = st.executeQuery("SELECT SLEEP(30)")) {
                rs.next();
                return "value " + rs.getInt(1) + " after " + ms(t0);
              } catch (SQLException e) {
                return "error " + e.getErrorCode() + " after " + ms(t0);
              }
            });
    try (Connection w = root("")) {
      for (int i = 0; i < 1000; i++) {
        try (Statement ws = w.createStatement();
            ResultSet rs =
                ws.executeQuery(
                    "SELECT SUM(INFO = 'SELECT SLEEP(30)'), SUM(INFO = 'SELECT SLEEP(3)')"
                        + " FROM information_schema.PROCESSLIST")) {
          rs.next();
          if (rs.getInt(1) > 0 && rs.getInt(2) > 1) break;
        }
        Thread.sleep(20);
      }
    }
    long t0 = System.nanoTime();
    st.cancel();
    put("cancelled", v.get(40, TimeUnit.SECONDS));
    put("cancelCallMs", ms(t0));
    try (Statement s2 = victim.createStatement();
        ResultSet rs = s2.executeQuery("SELECT 7")) {
      rs.next();
      put("afterCancel", rs.getInt(1));
    }
    victim.close();
    put("bystanderProxy", byProxy.get(40, TimeUnit.SECONDS));
    put("bystanderDirect", byDirect.get(40, TimeUnit.SECONDS));
    ex.shutdown();
  }

  static String sleep(Connection c, int secs) throws SQLException {
    long t0 = System.nanoTime();
    try (c;
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT SLEEP(" + secs + ")")) {
      rs.next();
      return "value " + rs.getInt(1) + " after " + ms(t0);
    } catch (SQLException e) {
      return "error " + e.getErrorCode() + " after " + ms(t0);
    }
  }

  // executeBatch of n INSERTs into a plain table with useBulkStmts=true,
  // directly or through the proxy; the backend's statement counters tell
  // whether it went as COM_STMT_BULK_EXECUTE.
  static void batch(String table, boolean isDirect, int n) throws SQLException {
    String opts = "&useBulkStmts=true";
    try (Connection r = root("");
        Connection c = isDirect ? root(opts) : app(opts)) {
      Map<String, Long> before = status(r);
      long t0 = System.nanoTime();
      int[] counts;
      try (PreparedStatement ps =
          c.prepareStatement("INSERT INTO " + table + " (id, v) VALUES (?, ?)")) {
        for (int i = 1; i <= n; i++) {
          ps.setInt(1, i);
          ps.setString(2, "row " + i);
          ps.addBatch();
        }
        counts = ps.executeBatch();
      }
      long took = ms(t0);
      String d = deltas(before, status(r));
      try (Statement st = r.createStatement();
          ResultSet rs =
              st.executeQuery(
                  "SELECT COUNT(*), COALESCE(SUM(id), 0), SUM(v = CONCAT('row ', id)) FROM " + table)) {
        rs.next();
        put(table + "Rows", rs.getLong(1));
        put(table + "IdSum", rs.getLong(2));
        put(table + "Matching", rs.getLong(3));
      }
      put(table + "Counts", counts.length);
      put(table + "Ms", took);
      put(table + "Status", d);
    }
  }

  // executeBatch of n INSERTs without a key into a rule table (the proxy
  // fills id), with or without bulk statements, with or without asking for
  // generated keys (Connector/J 2.x sends a bulk execute only without).
  static void ruleBatch(String table, boolean bulk, boolean wantKeys, int n)
      throws SQLException {
    try (Connection r = root("");
        Connection c = app("&useBulkStmts=" + bulk)) {
      List<Long> keys = new ArrayList<>();
      Map<String, Long> before = status(r);
      try (PreparedStatement ps =
          c.prepareStatement(
              "INSERT INTO " + table + " (v) VALUES (?)",
              wantKeys ? Statement.RETURN_GENERATED_KEYS : Statement.NO_GENERATED_KEYS)) {
        for (int i = 1; i <= n; i++) {
          ps.setString(1, "row " + i);
          ps.addBatch();
        }
        ps.executeBatch();
        if (wantKeys) {
          try (ResultSet rs = ps.getGeneratedKeys()) {
            while (rs.next()) keys.add(rs.getLong(1));
          }
        }
      } catch (SQLException e) {
        put(table + "Error", e.getErrorCode() + " " + e.getMessage());
        return;
      }
      put(table + "Status", deltas(before, status(r)));
      List<Long> ids = new ArrayList<>();
      try (Statement st = c.createStatement();
          ResultSet rs = st.executeQuery("SELECT id FROM " + table + " ORDER BY CAST(SUBSTRING(v, 5) AS UNSIGNED)")) {
        while (rs.next()) ids.add(rs.getLong(1));
      }
      put(table + "Ids", ids.toString());
      put(table + "Keys", keys.toString());
    }
  }

  static Map<String, Long> status(Connection r) throws SQLException {
    Map<String, Long> m = new HashMap<>();
    try (Statement st = r.createStatement();
        ResultSet rs =
            st.executeQuery(
                "SHOW GLOBAL STATUS WHERE Variable_name IN"
                    + " ('Com_insert', 'Com_stmt_execute', 'Com_stmt_prepare', 'Questions')")) {
      while (rs.next()) m.put(rs.getString(1), rs.getLong(2));
    }
    return m;
  }

  static String deltas(Map<String, Long> before, Map<String, Long> after) {
    StringBuilder d = new StringBuilder();
    for (String k : after.keySet()) {
      d.append(k).append('=').append(after.get(k) - before.getOrDefault(k, 0L)).append(' ');
    }
    return d.toString().trim();
  }

  static long ms(long t0) {
    return (System.nanoTime() - t0) / 1_000_000;
  }

  static void put(String k, Object v) {
    out.append('"').append(k).append("\":");
    if (v instanceof Number) {
      out.append(v);
    } else {
      out.append('"');
      for (char ch : String.valueOf(v).toCharArray()) {
        if (ch == '"' || ch == '\\') out.append('\\').append(ch);
        else if (ch < 0x20) out.append(String.format("\\u%04x", (int) ch));
        else out.append(ch);
      }
      out.append('"');
    }
    out.append(',');
  }
}
