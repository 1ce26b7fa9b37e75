// JDBC (pgjdbc) and snowflake ids: Statement.RETURN_GENERATED_KEYS and
// getGeneratedKeys() give the id the database made, as a long, for one row
// and for a batch; snowflake_nextval_batch(n) takes ids in blocks, the pattern
// for clients that pre-fetch ids (as Hibernate does from a sequence), and
// those ids are distinct, increasing and usable as explicit ids in inserts.
//
// Connects over TCP to 127.0.0.1 (pgjdbc has no Unix sockets of its own), to
// the port, database and user in PGPORT, PGDATABASE and PGUSER, with no
// password; the database needs CREATE EXTENSION snowflake.  Java 11+ runs the
// source file directly:
//   java -cp /usr/share/java/postgresql.jar SnowflakeIds.java

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Properties;

public class SnowflakeIds {
    static void check(boolean condition, String message) {
        if (!condition) {
            throw new AssertionError(message);
        }
    }

    static String env(String name, String otherwise) {
        String value = System.getenv(name);
        return value == null || value.isEmpty() ? otherwise : value;
    }

    static String serverText(Connection conn, long id) throws SQLException {
        try (PreparedStatement select = conn.prepareStatement("SELECT id::text FROM orders WHERE id = ?")) {
            select.setLong(1, id);
            try (ResultSet rs = select.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        }
    }

    static void run(Connection conn) throws SQLException {
        try (Statement st = conn.createStatement()) {
            st.execute("DROP TABLE IF EXISTS orders");
            st.execute("CREATE TABLE orders ("
                    + " id bigint PRIMARY KEY DEFAULT snowflake_nextval(),"
                    + " customer text NOT NULL)");
        }

        // readme:jdbc-generated-keys
        long id;
        try (PreparedStatement insert = conn.prepareStatement(
                "INSERT INTO orders (customer) VALUES (?)", Statement.RETURN_GENERATED_KEYS)) {
            insert.setString(1, "ada");
            insert.executeUpdate();
            try (ResultSet keys = insert.getGeneratedKeys()) {
                keys.next();
                id = keys.getLong("id");
            }
        }
        // end
        check(id > (1L << 53), id + " is not above 2^53");
        check(Long.toString(id).equals(serverText(conn, id)), id + " differs from the server's id::text");

        // A batch of inserts: one generated key per row, in the order of the rows.
        List<Long> batchKeys = new ArrayList<>();
        try (PreparedStatement insert = conn.prepareStatement(
                "INSERT INTO orders (customer) VALUES (?)", Statement.RETURN_GENERATED_KEYS)) {
            for (String customer : new String[] {"grace", "edsger", "barbara"}) {
                insert.setString(1, customer);
                insert.addBatch();
            }
            insert.executeBatch();
            try (ResultSet keys = insert.getGeneratedKeys()) {
                while (keys.next()) {
                    Object key = keys.getObject("id");
                    check(key instanceof Long, "a generated key arrived as " + key.getClass().getName());
                    batchKeys.add((Long) key);
                }
            }
        }
        check(batchKeys.size() == 3, "the batch gave " + batchKeys.size() + " generated keys, not 3");
        check(id < batchKeys.get(0) && batchKeys.get(0) < batchKeys.get(1) && batchKeys.get(1) < batchKeys.get(2),
                "the batch's keys are not increasing: " + id + ", " + batchKeys);

        // readme:jdbc-nextval-batch
        List<Long> ids = new ArrayList<>();
        try (PreparedStatement take = conn.prepareStatement("SELECT snowflake_nextval_batch(?)")) {
            take.setInt(1, 50);
            try (ResultSet rs = take.executeQuery()) {
                while (rs.next()) {
                    ids.add(rs.getLong(1));
                }
            }
        }
        try (PreparedStatement insert = conn.prepareStatement(
                "INSERT INTO orders (id, customer) VALUES (?, ?)")) {
            for (long preId : ids) {
                insert.setLong(1, preId);
                insert.setString(2, "customer " + preId);
                insert.addBatch();
            }
            insert.executeBatch();
        }
        // end
        check(ids.size() == 50, "snowflake_nextval_batch(50) gave " + ids.size() + " ids");
        check(new HashSet<>(ids).size() == 50, "snowflake_nextval_batch(50) gave duplicate ids");
        check(ids.get(0) > batchKeys.get(2), "the block's first id is not above the ids issued before");
        for (int i = 1; i < ids.size(); i++) {
            check(ids.get(i) > ids.get(i - 1), "the block is not increasing at " + i + ": " + ids);
        }
        for (long preId : ids) {
            check(Long.toString(preId).equals(serverText(conn, preId)), "no row with the pre-fetched id " + preId);
        }

        // The column's default goes on above the block: no collision with it.
        try (Statement st = conn.createStatement();
                ResultSet rs = st.executeQuery("INSERT INTO orders (customer) VALUES ('after') RETURNING id")) {
            rs.next();
            check(rs.getLong(1) > ids.get(ids.size() - 1), "a default id is not above the pre-fetched block");
        }
        try (Statement st = conn.createStatement();
                ResultSet rs = st.executeQuery("SELECT count(*), count(DISTINCT id) FROM orders")) {
            rs.next();
            check(rs.getLong(1) == 55 && rs.getLong(2) == 55, "the table does not hold 55 distinct rows");
        }
    }

    public static void main(String[] args) {
        String url = "jdbc:postgresql://127.0.0.1:" + env("PGPORT", "5432") + "/" + env("PGDATABASE", "postgres");
        Properties props = new Properties();
        props.setProperty("user", env("PGUSER", "postgres"));
        try (Connection conn = DriverManager.getConnection(url, props)) {
            run(conn);
        } catch (SQLException | AssertionError e) {
            System.err.println("jdbc: " + e);
            for (StackTraceElement frame : e.getStackTrace()) {
                if (frame.getClassName().equals(SnowflakeIds.class.getName())) {
                    System.err.println("\tat " + frame);
                }
            }
            System.exit(1);
        }
        System.out.println("jdbc: ok");
    }
}
