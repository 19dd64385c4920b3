//! Step plans: `start:stop:step` ranges or `a,b,c` lists of load levels.

/// Parses `100:3000:100` (inclusive) or `100,200,400`. Levels must be positive and increasing.
pub fn parse_levels(s: &str, what: &str) -> Result<Vec<f64>, String> {
    let bad = |why: &str| format!("{what} '{s}': {why} (expected start:stop:step or a,b,c)");
    let num = |t: &str| -> Result<f64, String> {
        let t = t.trim();
        let (n, mult) = match t.strip_suffix(['k', 'K']) {
            Some(n) => (n, 1e3),
            None => (t, 1.0),
        };
        n.parse::<f64>()
            .ok()
            .map(|v| v * mult)
            .filter(|v| v.is_finite() && *v > 0.0)
            .ok_or_else(|| bad(&format!("'{t}' is not a positive number")))
    };
    let levels: Vec<f64> = if s.contains(':') {
        let parts: Vec<&str> = s.split(':').collect();
        if parts.len() != 3 {
            return Err(bad("a range needs three parts"));
        }
        let (start, stop, step) = (num(parts[0])?, num(parts[1])?, num(parts[2])?);
        if stop < start {
            return Err(bad("stop is below start"));
        }
        let n = ((stop - start) / step + 1e-9).floor() as usize + 1;
        if n > 10_000 {
            return Err(bad("more than 10,000 steps"));
        }
        (0..n).map(|i| start + step * i as f64).collect()
    } else {
        s.split(',').map(num).collect::<Result<_, _>>()?
    };
    if levels.is_empty() {
        return Err(bad("no level"));
    }
    if levels.windows(2).any(|w| w[1] <= w[0]) {
        return Err(bad("levels must increase"));
    }
    Ok(levels)
}

/// The same for user counts: whole numbers.
pub fn parse_users(s: &str) -> Result<Vec<usize>, String> {
    let levels = parse_levels(s, "--users")?;
    if levels.iter().any(|v| v.fract() != 0.0) {
        return Err(format!("--users '{s}': user counts must be whole numbers"));
    }
    if levels.iter().any(|&v| v > 1_000_000.0) {
        return Err(format!("--users '{s}': at most 1,000,000 users"));
    }
    Ok(levels.into_iter().map(|v| v as usize).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_lists() {
        assert_eq!(
            parse_levels("100:500:100", "--rates").unwrap(),
            vec![100.0, 200.0, 300.0, 400.0, 500.0]
        );
        assert_eq!(
            parse_levels("100:450:100", "--rates").unwrap(),
            vec![100.0, 200.0, 300.0, 400.0]
        );
        assert_eq!(
            parse_levels("1k,2k,2.5k", "--rates").unwrap(),
            vec![1000.0, 2000.0, 2500.0]
        );
        assert_eq!(parse_users("1:200:50").unwrap(), vec![1, 51, 101, 151]);
        assert_eq!(parse_users("8").unwrap(), vec![8]);
    }

    #[test]
    fn rejects() {
        for bad in [
            "",
            "1:2",
            "5:1:1",
            "a,b",
            "3,2",
            "1:10:0",
            "0:10:1",
            "1:1000000:1",
        ] {
            assert!(parse_levels(bad, "--rates").is_err(), "{bad}");
        }
        assert!(parse_users("1.5,2").is_err());
        assert!(parse_levels("x", "--rates")
            .unwrap_err()
            .contains("--rates"));
    }
}
