<?php
// S1's database page: SELECT one random row, then INSERT this page's own timings.
// ?rows=N picks among the first N rows (default 26, S1's table size; the table holds 10,000).
// The port is filled in by `overload lab up` from the prefix's MariaDB.
header('Content-Type: text/plain');
$t0 = hrtime(true);
$rows = max(1, min(10000, (int)($_GET['rows'] ?? 26)));
$port = {{DB_PORT}};
if ($port === 0) {
    // The stack was brought up with --no-db.
    http_response_code(503);
    echo "ERROR db: this stack runs without a database (--no-db)\n";
    exit;
}
try {
    $db = new mysqli('127.0.0.1', 'lab', 'labpass', 'lab', $port);
    $t1 = hrtime(true);
    $id = mt_rand(1, $rows);
    $row = $db->query("SELECT id, name, value FROM test1 WHERE id = $id")->fetch_assoc();
    $t2 = hrtime(true);
    $db->query(sprintf(
        "INSERT INTO test2 (page, row_id, connect_us, select_us) VALUES ('db.php', %d, %d, %d)",
        $id, intdiv($t1 - $t0, 1000), intdiv($t2 - $t1, 1000)
    ));
    $db->close();
    if ($row === null) {
        http_response_code(500);
        echo "ERROR row $id missing\n";
        exit;
    }
    printf("OK db row=%d name=%s value=%d connect_us=%d select_us=%d\n",
        $row['id'], $row['name'], $row['value'], intdiv($t1 - $t0, 1000), intdiv($t2 - $t1, 1000));
} catch (mysqli_sql_exception $e) {
    // An answer, not a hang: the load generator counts it as a 503.
    http_response_code(503);
    echo 'ERROR db: ', $e->getMessage(), "\n";
}
