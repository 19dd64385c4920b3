//! `${var}` templates: a text cut once, at load, into literal pieces and variable ids, so
//! rendering is concatenation (no parsing, no name lookup per request).

/// One piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Lit(String),
    /// The variable with this id (an index into the user's values).
    Var(usize),
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Template {
    pub parts: Vec<Part>,
}

impl Template {
    /// Cuts `text` into pieces; `lookup` gives a variable's id, or None when it is unknown
    /// (the error names it). `$$` is a literal `$`; a `$` before anything but `{` stays as is.
    pub fn parse(text: &str, lookup: impl Fn(&str) -> Option<usize>) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut lit = String::new();
        let mut rest = text;
        while let Some(i) = rest.find('$') {
            lit.push_str(&rest[..i]);
            let after = &rest[i + 1..];
            if let Some(r) = after.strip_prefix('$') {
                lit.push('$');
                rest = r;
            } else if let Some(r) = after.strip_prefix('{') {
                let end = r
                    .find('}')
                    .ok_or_else(|| format!("'${{' without a closing '}}' in '{text}'"))?;
                let name = &r[..end];
                if !is_var_name(name) {
                    return Err(format!(
                        "'${{{name}}}': a variable name is letters, digits and '_'"
                    ));
                }
                let id = lookup(name).ok_or_else(|| format!("unknown variable '${{{name}}}'"))?;
                if !lit.is_empty() {
                    parts.push(Part::Lit(std::mem::take(&mut lit)));
                }
                parts.push(Part::Var(id));
                rest = &r[end + 1..];
            } else {
                lit.push('$');
                rest = after;
            }
        }
        lit.push_str(rest);
        if !lit.is_empty() {
            parts.push(Part::Lit(lit));
        }
        Ok(Template { parts })
    }

    /// The template without variables, as plain text.
    pub fn literal(&self) -> Option<&str> {
        match self.parts.as_slice() {
            [] => Some(""),
            [Part::Lit(s)] => Some(s),
            _ => None,
        }
    }

    /// Appends the rendered text to `out`; `vars[id]` is each variable's value.
    pub fn render_into(&self, vars: &[String], out: &mut Vec<u8>) {
        for p in &self.parts {
            match p {
                Part::Lit(s) => out.extend_from_slice(s.as_bytes()),
                Part::Var(id) => out.extend_from_slice(vars[*id].as_bytes()),
            }
        }
    }

    pub fn render(&self, vars: &[String]) -> String {
        let mut out = Vec::new();
        self.render_into(vars, &mut out);
        // Pieces are whole strings: concatenating them cannot split a character.
        String::from_utf8(out).unwrap_or_default()
    }

    /// The ids of the variables it uses.
    pub fn vars(&self) -> impl Iterator<Item = usize> + '_ {
        self.parts.iter().filter_map(|p| match p {
            Part::Var(id) => Some(*id),
            Part::Lit(_) => None,
        })
    }
}

pub fn is_var_name(s: &str) -> bool {
    !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(name: &str) -> Option<usize> {
        ["user", "token"].iter().position(|n| *n == name)
    }

    #[test]
    fn renders_variables_between_literals() {
        let t = Template::parse("/u/${user}?t=${token}&x=$$1&y=$z", ids).unwrap();
        let vars = vec!["ann".to_string(), "T0".to_string()];
        assert_eq!(t.render(&vars), "/u/ann?t=T0&x=$1&y=$z");
        assert_eq!(t.vars().collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!(
            Template::parse("/plain", ids).unwrap().literal(),
            Some("/plain")
        );
        assert_eq!(t.literal(), None);
    }

    #[test]
    fn unknown_and_malformed_variables_are_refused() {
        assert_eq!(
            Template::parse("a ${nope} b", ids).unwrap_err(),
            "unknown variable '${nope}'"
        );
        assert!(Template::parse("${user", ids)
            .unwrap_err()
            .contains("closing"));
        assert!(Template::parse("${a-b}", ids)
            .unwrap_err()
            .contains("letters"));
    }
}
