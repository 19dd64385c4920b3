-- Lab schema, run as root over the socket at every `overload lab up mariadb`: idempotent.
CREATE DATABASE IF NOT EXISTS lab;
-- With skip-name-resolve a TCP login from 127.0.0.1 matches only 'lab'@'127.0.0.1';
-- 'lab'@'localhost' is the unix socket.
CREATE USER IF NOT EXISTS 'lab'@'localhost' IDENTIFIED BY 'labpass';
CREATE USER IF NOT EXISTS 'lab'@'127.0.0.1' IDENTIFIED BY 'labpass';
GRANT SELECT, INSERT, UPDATE, DELETE ON lab.* TO 'lab'@'localhost';
GRANT SELECT, INSERT, UPDATE, DELETE ON lab.* TO 'lab'@'127.0.0.1';
USE lab;
CREATE TABLE IF NOT EXISTS test1 (
    id INT NOT NULL PRIMARY KEY,
    name VARCHAR(64) NOT NULL,
    value INT NOT NULL,
    body VARCHAR(255) NOT NULL
) ENGINE = {{ENGINE}};
CREATE TABLE IF NOT EXISTS test2 (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    page VARCHAR(32) NOT NULL,
    row_id INT NOT NULL,
    connect_us INT NOT NULL,
    select_us INT NOT NULL,
    created TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
) ENGINE = {{ENGINE}};
-- 10,000 rows from the Sequence engine; db.php picks among the first 26 by default (S1).
INSERT IGNORE INTO test1 (id, name, value, body)
    SELECT seq, CONCAT('row-', seq), (seq * 7919) % 10007, REPEAT(CHAR(97 + seq % 26), 64)
    FROM seq_1_to_10000;
-- The engine knob also converts tables created earlier with the other engine.
SET @want = '{{ENGINE}}';
SET @e1 = (SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'lab' AND TABLE_NAME = 'test1');
SET @s = IF(@e1 = @want, 'DO 0', CONCAT('ALTER TABLE lab.test1 ENGINE = ', @want));
PREPARE st FROM @s; EXECUTE st; DEALLOCATE PREPARE st;
SET @e2 = (SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'lab' AND TABLE_NAME = 'test2');
SET @s = IF(@e2 = @want, 'DO 0', CONCAT('ALTER TABLE lab.test2 ENGINE = ', @want));
PREPARE st FROM @s; EXECUTE st; DEALLOCATE PREPARE st;
