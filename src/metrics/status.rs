//! Which answers count as success (`--ok-status`, experiment key `request.ok_status`): 2xx and
//! 3xx unless told otherwise. A URL list with a 404 on purpose (S2's siege list has one) says
//! `200-399,404`, so that page does not count as a failed request at every load, which would
//! mark the lightest step saturated.
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The lowest and highest status a list may name (HTTP's status classes 1xx–5xx).
const MIN: u16 = 100;
const MAX: u16 = 599;

/// A set of HTTP statuses: one bit per status 0–639, so the hot loop's test is a shift and a
/// mask, and the set is `Copy` into each worker's recorder.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct OkStatus {
    bits: [u64; 10],
}

impl Default for OkStatus {
    fn default() -> Self {
        let mut s = OkStatus { bits: [0; 10] };
        s.add(200, 399);
        s
    }
}

impl OkStatus {
    fn add(&mut self, lo: u16, hi: u16) {
        for c in lo..=hi {
            self.bits[usize::from(c / 64)] |= 1 << (c % 64);
        }
    }

    /// `200-399,404`: statuses and inclusive ranges, comma-separated, each within 100–599.
    pub fn parse(s: &str) -> Result<OkStatus, String> {
        let mut set = OkStatus { bits: [0; 10] };
        let num = |t: &str| -> Result<u16, String> {
            let t = t.trim();
            match t.parse::<u16>() {
                Ok(c) if (MIN..=MAX).contains(&c) => Ok(c),
                _ => Err(format!(
                    "'{t}' is not an HTTP status ({MIN}–{MAX}); write e.g. 200-399,404"
                )),
            }
        };
        for part in s.split(',') {
            if part.trim().is_empty() {
                return Err(format!(
                    "'{s}': an empty item; write statuses and ranges, e.g. 200-399,404"
                ));
            }
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (num(a)?, num(b)?),
                None => {
                    let c = num(part)?;
                    (c, c)
                }
            };
            if hi < lo {
                return Err(format!(
                    "'{}': the range ends before it starts",
                    part.trim()
                ));
            }
            set.add(lo, hi);
        }
        Ok(set)
    }

    /// Whether an answer with this status is a success.
    #[inline]
    pub fn contains(self, status: u16) -> bool {
        let i = usize::from(status / 64);
        i < self.bits.len() && self.bits[i] & (1 << (status % 64)) != 0
    }

    /// The same for a summary's status key (`"404"`; `"other"`, a status out of range, is never
    /// a success).
    pub fn contains_code(self, code: &str) -> bool {
        code.parse::<u16>().is_ok_and(|c| self.contains(c))
    }

    pub fn is_default(&self) -> bool {
        *self == OkStatus::default()
    }
}

/// The shortest list that parses back to the set: `200-399,404`.
impl fmt::Display for OkStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut c = MIN;
        while c <= MAX {
            if !self.contains(c) {
                c += 1;
                continue;
            }
            let lo = c;
            while c < MAX && self.contains(c + 1) {
                c += 1;
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if lo == c {
                write!(f, "{lo}")?;
            } else {
                write!(f, "{lo}-{c}")?;
            }
            c += 1;
        }
        Ok(())
    }
}

impl fmt::Debug for OkStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OkStatus({self})")
    }
}

impl Serialize for OkStatus {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for OkStatus {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<OkStatus, D::Error> {
        let s = String::deserialize(d)?;
        OkStatus::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_2xx_and_3xx() {
        let d = OkStatus::default();
        assert!(d.contains(200) && d.contains(304) && d.contains(399));
        assert!(!d.contains(199) && !d.contains(404) && !d.contains(503) && !d.contains(0));
        assert!(!d.contains(u16::MAX));
        assert_eq!(d.to_string(), "200-399");
        assert!(d.is_default());
        assert!(d.contains_code("204") && !d.contains_code("other"));
    }

    #[test]
    fn lists_and_ranges_parse_and_print_back() {
        let s = OkStatus::parse("200-399, 404").unwrap();
        assert!(s.contains(404) && s.contains(301) && !s.contains(403) && !s.contains(500));
        assert_eq!(s.to_string(), "200-399,404");
        assert!(!s.is_default());
        // Overlapping and adjacent items merge when printed.
        let s = OkStatus::parse("200,201-204,204-299,599").unwrap();
        assert_eq!(s.to_string(), "200-299,599");
        assert_eq!(OkStatus::parse(&s.to_string()).unwrap(), s);
        // Serialized as its list.
        let j = serde_json::to_string(&s).unwrap();
        assert_eq!(j, "\"200-299,599\"");
        assert_eq!(serde_json::from_str::<OkStatus>(&j).unwrap(), s);
    }

    #[test]
    fn bad_lists_say_what() {
        for (bad, says) in [
            ("", "an empty item"),
            ("200,", "an empty item"),
            ("2xx", "'2xx' is not an HTTP status"),
            ("99", "'99' is not an HTTP status"),
            ("600", "'600' is not an HTTP status"),
            ("400-200", "the range ends before it starts"),
            ("200-", "'' is not an HTTP status"),
        ] {
            let e = OkStatus::parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        assert!(serde_json::from_str::<OkStatus>("\"abc\"").is_err());
    }
}
