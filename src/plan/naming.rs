//! Request names for the statistics per name: a scenario names its requests; a URL mix (a URL
//! list, an access log) names each request by its path with the query's values replaced by
//! `*`, so `/search?q=shoes` and `/search?q=hats` are one name, `/search?q=*`.
use std::collections::HashMap;

/// Names kept apart at most; the rest share [`OTHER`] (a log of a million distinct paths must
/// not make a million histograms).
pub const MAX_NAMES: usize = 200;
/// The name of the requests beyond [`MAX_NAMES`].
pub const OTHER: &str = "other";

/// The name of a request target (`/path?query`): the path, and the query with each value
/// replaced by `*` (keys and their order kept).
pub fn name_of_target(target: &str) -> String {
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (target, None),
    };
    let path = if path.is_empty() { "/" } else { path };
    let Some(query) = query else {
        return path.to_string();
    };
    let mut out = String::with_capacity(target.len());
    out.push_str(path);
    out.push('?');
    for (i, pair) in query.split('&').enumerate() {
        if i > 0 {
            out.push('&');
        }
        match pair.split_once('=') {
            Some((k, _)) => {
                out.push_str(k);
                out.push_str("=*");
            }
            None => out.push_str(pair),
        }
    }
    out
}

/// The names table of a run, built as requests are named: the first [`MAX_NAMES`] distinct
/// names get their own index, later ones share `other`'s.
#[derive(Debug, Default)]
pub struct Names {
    names: Vec<String>,
    index: HashMap<String, u16>,
    other: Option<u16>,
}

impl Names {
    pub fn new() -> Names {
        Names::default()
    }

    /// The index of `name`, adding it (or `other`, once the table is full).
    pub fn index(&mut self, name: &str) -> u16 {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        if self.index.len() < MAX_NAMES {
            return self.push(name);
        }
        if let Some(i) = self.other {
            return i;
        }
        // A request already named `other` shares its row.
        let i = match self.index.get(OTHER) {
            Some(&i) => i,
            None => self.push(OTHER),
        };
        self.other = Some(i);
        i
    }

    fn push(&mut self, name: &str) -> u16 {
        // At most MAX_NAMES + 1 entries: always fits.
        let i = self.names.len() as u16;
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), i);
        i
    }

    /// The table, in index order.
    pub fn into_vec(self) -> Vec<String> {
        self.names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_become_stars() {
        assert_eq!(
            name_of_target("/search?q=shoes&page=2"),
            "/search?q=*&page=*"
        );
        assert_eq!(name_of_target("/a/b"), "/a/b");
        assert_eq!(name_of_target("/x?flag&n=1"), "/x?flag&n=*");
        assert_eq!(name_of_target("/x?a=1=2"), "/x?a=*");
        assert_eq!(name_of_target("?q=1"), "/?q=*");
        assert_eq!(name_of_target("/x?"), "/x?");
    }

    #[test]
    fn the_table_is_bounded_and_the_rest_is_other() {
        let mut t = Names::new();
        for i in 0..MAX_NAMES {
            assert_eq!(t.index(&format!("/p{i}")) as usize, i);
        }
        // Known names keep their index; new ones all land in `other`.
        assert_eq!(t.index("/p7"), 7);
        let other = t.index("/new1");
        assert_eq!(other as usize, MAX_NAMES);
        assert_eq!(t.index("/new2"), other);
        let v = t.into_vec();
        assert_eq!(v.len(), MAX_NAMES + 1);
        assert_eq!(v[MAX_NAMES], OTHER);
    }
}
