//! The MariaDB/MySQL rules (S1 ch. 7, S2 ch. 4–7), read-only: the query cache,
//! max_connections against the web workers, the slow query log, MyISAM tables under writes.
//! Pure functions of [`DbEvidence`]: `SHOW GLOBAL VARIABLES`, `SHOW GLOBAL STATUS` and the
//! MyISAM tables of information_schema, asked through `observe::mariadb::query_pairs`.
use super::{num, Check, Level, Probe, S1, S1_S2, S2};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DbEvidence {
    /// `USER@HOST:PORT`, for the evidence lines.
    pub target: String,
    pub variables: Probe<Vec<(String, String)>>,
    pub status: Probe<Vec<(String, String)>>,
    /// (schema.table, engine) of the MyISAM tables the account can see.
    pub myisam: Probe<Vec<(String, String)>>,
    /// PHP workers at most, and where that figure comes from.
    pub workers: Probe<(u64, String)>,
}

/// The tables of MariaDB's own schemas are MyISAM/Aria by design: not the application's.
pub const MYISAM_QUERY: &str = "SELECT CONCAT(TABLE_SCHEMA, '.', TABLE_NAME), ENGINE \
     FROM information_schema.TABLES WHERE ENGINE = 'MyISAM' AND TABLE_SCHEMA NOT IN \
     ('mysql', 'information_schema', 'performance_schema', 'sys')";

pub fn checks(e: &DbEvidence) -> Vec<Check> {
    vec![query_cache(e), max_connections(e), slow_log(e), myisam(e)]
}

fn get<'a>(pairs: &'a [(String, String)], k: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(k))
        .map(|(_, v)| v.as_str())
}

fn int(pairs: &[(String, String)], k: &str) -> Option<u64> {
    get(pairs, k).and_then(|v| v.trim().parse().ok())
}

fn on(v: Option<&str>) -> bool {
    v.is_some_and(|v| matches!(v.to_ascii_uppercase().as_str(), "ON" | "1" | "DEMAND" | "2"))
}

pub const QUERY_CACHE: &str = "db.query-cache";

/// The query cache on while it rarely hits, or pruned for want of memory: every write to a
/// table empties its entries under one global lock (S2), so it must earn its keep.
pub fn query_cache(e: &DbEvidence) -> Check {
    let vars = match &e.variables {
        Ok(v) => v,
        Err(why) => return Check::skipped(QUERY_CACHE, why.clone(), S1_S2),
    };
    let ty = get(vars, "query_cache_type").unwrap_or("(absent: MySQL 8 has none)");
    let size = int(vars, "query_cache_size").unwrap_or(0);
    let seen = format!(
        "{}: query_cache_type = {ty}, query_cache_size = {}",
        e.target,
        num(size)
    );
    if !on(Some(ty)) || size == 0 {
        return Check::ok(QUERY_CACHE, "query cache off", seen, S1_S2);
    }
    let status = match &e.status {
        Ok(s) => s,
        Err(why) => return Check::skipped(QUERY_CACHE, why.clone(), S1_S2),
    };
    let hits = int(status, "Qcache_hits").unwrap_or(0);
    let inserts = int(status, "Qcache_inserts").unwrap_or(0);
    let prunes = int(status, "Qcache_lowmem_prunes").unwrap_or(0);
    let seen = format!(
        "{seen}; Qcache_hits {}, Qcache_inserts {}, Qcache_lowmem_prunes {}",
        num(hits),
        num(inserts),
        num(prunes)
    );
    // Too few lookups to judge a hit ratio: say what was seen, judge nothing.
    if hits + inserts >= 1000 && hits < inserts {
        return Check::finding(
            QUERY_CACHE,
            Level::Medium,
            "the query cache misses more than it hits",
            seen,
            "turn the query cache off (query_cache_type = 0, query_cache_size = 0): each write \
             invalidates the table's entries under one global lock",
            S2,
        );
    }
    if prunes > 0 {
        return Check::finding(
            QUERY_CACHE,
            Level::Low,
            "the query cache is too small",
            seen,
            "raise query_cache_size until Qcache_lowmem_prunes stays 0, or turn it off",
            S1,
        );
    }
    Check::ok(QUERY_CACHE, "query cache on", seen, S1_S2)
}

pub const MAX_CONNECTIONS: &str = "db.max-connections";

/// Every PHP worker may hold a connection: max_connections below the workers fails requests
/// with "Too many connections" exactly when the load peaks (S1).
pub fn max_connections(e: &DbEvidence) -> Check {
    let vars = match &e.variables {
        Ok(v) => v,
        Err(why) => return Check::skipped(MAX_CONNECTIONS, why.clone(), S1),
    };
    let Some(max) = int(vars, "max_connections") else {
        return Check::skipped(MAX_CONNECTIONS, "max_connections was not in the answer", S1);
    };
    let (workers, from) = match &e.workers {
        Ok(w) => (w.0, &w.1),
        Err(why) => return Check::skipped(MAX_CONNECTIONS, why.clone(), S1),
    };
    let used = e
        .status
        .as_ref()
        .ok()
        .and_then(|s| int(s, "Max_used_connections"))
        .map_or(String::new(), |u| {
            format!(", Max_used_connections {}", num(u))
        });
    let seen = format!(
        "{}: max_connections = {}{used}; {workers} PHP workers ({from})",
        e.target,
        num(max)
    );
    if max < workers {
        Check::finding(
            MAX_CONNECTIONS,
            Level::High,
            "fewer database connections than PHP workers",
            seen,
            format!(
                "raise max_connections above the web workers (at least {}, with room for \
                 other clients), or lower the workers",
                workers + 10
            ),
            S1,
        )
    } else {
        Check::ok(MAX_CONNECTIONS, "connections for every worker", seen, S1)
    }
}

pub const SLOW_LOG: &str = "db.slow-query-log";

pub fn slow_log(e: &DbEvidence) -> Check {
    let vars = match &e.variables {
        Ok(v) => v,
        Err(why) => return Check::skipped(SLOW_LOG, why.clone(), S1),
    };
    let state = get(vars, "slow_query_log").unwrap_or("?");
    let seen = format!(
        "{}: slow_query_log = {state}, long_query_time = {}",
        e.target,
        get(vars, "long_query_time").unwrap_or("?")
    );
    if on(Some(state)) {
        Check::ok(SLOW_LOG, "slow query log on", seen, S1)
    } else {
        Check::finding(
            SLOW_LOG,
            Level::Low,
            "the slow query log is off",
            seen,
            "slow_query_log = 1 with long_query_time = 1: the queries that slow the site \
             under load are then named",
            S1,
        )
    }
}

pub const MYISAM: &str = "db.myisam";

/// MyISAM locks the whole table for a write; InnoDB locks rows (S2).
pub fn myisam(e: &DbEvidence) -> Check {
    let tables = match &e.myisam {
        Ok(t) => t,
        Err(why) => return Check::skipped(MYISAM, why.clone(), S2),
    };
    if tables.is_empty() {
        return Check::ok(
            MYISAM,
            "no MyISAM tables",
            format!("{}: no MyISAM table among those the account sees", e.target),
            S2,
        );
    }
    let names: Vec<&str> = tables.iter().take(5).map(|(t, _)| t.as_str()).collect();
    let more = if tables.len() > 5 {
        format!(" and {} more", tables.len() - 5)
    } else {
        String::new()
    };
    let waited = e
        .status
        .as_ref()
        .ok()
        .and_then(|s| int(s, "Table_locks_waited"))
        .map_or(String::new(), |w| {
            format!("; Table_locks_waited {} since start", num(w))
        });
    Check::finding(
        MYISAM,
        Level::Medium,
        "MyISAM tables lock whole tables on writes",
        format!(
            "{}: {} MyISAM table(s): {}{more}{waited}",
            e.target,
            tables.len(),
            names.join(", ")
        ),
        "convert them to InnoDB (ALTER TABLE t ENGINE = InnoDB), which locks rows: under \
         writes MyISAM queues every reader behind each writer",
        S2,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// MariaDB 10.11's defaults, as SHOW GLOBAL VARIABLES prints them.
    fn mariadb_defaults() -> DbEvidence {
        DbEvidence {
            target: "lab@127.0.0.1:13306".into(),
            variables: Ok(pairs(&[
                ("max_connections", "151"),
                ("query_cache_size", "1048576"),
                ("query_cache_type", "OFF"),
                ("slow_query_log", "OFF"),
                ("long_query_time", "10.000000"),
            ])),
            status: Ok(pairs(&[
                ("Max_used_connections", "12"),
                ("Qcache_hits", "0"),
                ("Qcache_inserts", "0"),
                ("Qcache_lowmem_prunes", "0"),
                ("Table_locks_waited", "0"),
            ])),
            myisam: Ok(vec![]),
            workers: Ok((20, "the lab's pm.max_children".into())),
        }
    }

    fn level(c: &Check) -> Level {
        assert!(!c.evidence.is_empty(), "{c:?}");
        assert_eq!(c.change.is_some(), c.level.is_finding(), "{c:?}");
        c.level
    }

    fn set(v: &mut Probe<Vec<(String, String)>>, k: &str, val: &str) {
        let v = v.as_mut().unwrap();
        v.retain(|(n, _)| n != k);
        v.push((k.into(), val.into()));
    }

    #[test]
    fn the_query_cache_off_on_missing_or_small() {
        let mut e = mariadb_defaults();
        let c = query_cache(&e);
        assert_eq!(level(&c), Level::Ok);
        assert!(c.evidence.contains("query_cache_type = OFF"), "{c:?}");
        // `lab up mariadb --query-cache on`, then a write-heavy load: mostly inserts.
        set(&mut e.variables, "query_cache_type", "ON");
        set(&mut e.variables, "query_cache_size", "67108864");
        set(&mut e.status, "Qcache_hits", "200");
        set(&mut e.status, "Qcache_inserts", "5000");
        let c = query_cache(&e);
        assert_eq!(level(&c), Level::Medium);
        assert!(
            c.evidence
                .contains("Qcache_hits 200, Qcache_inserts 5,000, Qcache_lowmem_prunes 0"),
            "{c:?}"
        );
        set(&mut e.status, "Qcache_hits", "90000");
        set(&mut e.status, "Qcache_lowmem_prunes", "31");
        assert_eq!(level(&query_cache(&e)), Level::Low);
        set(&mut e.status, "Qcache_lowmem_prunes", "0");
        assert_eq!(level(&query_cache(&e)), Level::Ok);
        // Too few lookups to judge a ratio.
        set(&mut e.status, "Qcache_hits", "1");
        set(&mut e.status, "Qcache_inserts", "30");
        assert_eq!(level(&query_cache(&e)), Level::Ok);
    }

    #[test]
    fn max_connections_against_the_workers() {
        let mut e = mariadb_defaults();
        let c = max_connections(&e);
        assert_eq!(level(&c), Level::Ok);
        assert_eq!(
            c.evidence,
            "lab@127.0.0.1:13306: max_connections = 151, Max_used_connections 12; 20 PHP \
             workers (the lab's pm.max_children)"
        );
        e.workers = Ok((200, "--workers".into()));
        let c = max_connections(&e);
        assert_eq!(level(&c), Level::High);
        assert!(c.change.unwrap().contains("at least 210"));
        e.workers = Err("the pool size is unknown (give --workers N)".into());
        assert_eq!(max_connections(&e).level, Level::Skipped);
    }

    #[test]
    fn slow_log_off_is_a_finding() {
        let mut e = mariadb_defaults();
        let c = slow_log(&e);
        assert_eq!(level(&c), Level::Low);
        assert!(c
            .evidence
            .contains("slow_query_log = OFF, long_query_time = 10.000000"));
        set(&mut e.variables, "slow_query_log", "ON");
        assert_eq!(level(&slow_log(&e)), Level::Ok);
    }

    #[test]
    fn myisam_tables_are_named_with_the_lock_waits() {
        let mut e = mariadb_defaults();
        assert_eq!(level(&myisam(&e)), Level::Ok);
        e.myisam = Ok(pairs(&[("lab.test1", "MyISAM"), ("lab.test2", "MyISAM")]));
        set(&mut e.status, "Table_locks_waited", "4211");
        let c = myisam(&e);
        assert_eq!(level(&c), Level::Medium);
        assert!(
            c.evidence.contains(
                "2 MyISAM table(s): lab.test1, lab.test2; Table_locks_waited 4,211 since start"
            ),
            "{c:?}"
        );
    }

    #[test]
    fn an_unreachable_server_skips_every_rule_with_the_reason() {
        let mut e = mariadb_defaults();
        let why = "mysql lab@127.0.0.1:13306: Can't connect to server".to_string();
        e.variables = Err(why.clone());
        e.status = Err(why.clone());
        e.myisam = Err(why);
        for c in checks(&e) {
            assert_eq!(c.level, Level::Skipped, "{c:?}");
            assert!(c.evidence.contains("Can't connect"), "{c:?}");
        }
    }
}
