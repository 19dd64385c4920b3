//! Data feeders: a CSV file whose first line names the columns; each user (or each
//! iteration) takes the next row, and its columns become variables.
use std::path::Path;

/// Largest feeder file read (a million logins fit easily).
const MAX_FEEDER_FILE: u64 = 64 << 20;

/// Which rows a user gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowPer {
    /// User k takes row k (modulo the rows): a user keeps its login for the whole run.
    User,
    /// Every iteration of any user takes the next row.
    Iteration,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Feeder {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
    pub per: RowPer,
}

impl Feeder {
    /// Reads `path`; errors name the file and line.
    pub fn load(path: &Path, per: RowPer) -> Result<Feeder, String> {
        let shown = crate::fsutil::shown(path);
        let bytes = crate::fsutil::read_capped(path, MAX_FEEDER_FILE, "feeder")?;
        let text =
            String::from_utf8(bytes).map_err(|_| format!("{shown}: the CSV is not UTF-8 text"))?;
        let (columns, rows) = parse_csv(&text).map_err(|e| format!("{shown}:{e}"))?;
        if rows.is_empty() {
            return Err(format!("{shown}: no data row under the header line"));
        }
        Ok(Feeder { columns, rows, per })
    }
}

/// Parses CSV text (RFC 4180: `"` quotes a field, `""` inside is a quote): the header's
/// names and the rows, each as long as the header. Errors start with the line number.
pub fn parse_csv(text: &str) -> Result<(Vec<String>, Vec<Vec<String>>), String> {
    let mut records: Vec<(usize, Vec<String>)> = Vec::new();
    let mut field = String::new();
    let mut record = Vec::new();
    let mut quoted = false;
    let mut line = 1;
    let mut start_line = 1;
    let mut chars = text.chars().peekable();
    let mut at_field_start = true;
    while let Some(c) = chars.next() {
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                '"' => quoted = false,
                _ => {
                    if c == '\n' {
                        line += 1;
                    }
                    field.push(c);
                }
            }
            continue;
        }
        match c {
            '"' if at_field_start => {
                quoted = true;
                at_field_start = false;
            }
            ',' => {
                record.push(std::mem::take(&mut field));
                at_field_start = true;
            }
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' => {
                record.push(std::mem::take(&mut field));
                if !(record.len() == 1 && record[0].is_empty()) {
                    records.push((start_line, std::mem::take(&mut record)));
                }
                record.clear();
                line += 1;
                start_line = line;
                at_field_start = true;
            }
            _ => {
                field.push(c);
                at_field_start = false;
            }
        }
    }
    if quoted {
        return Err(format!("{start_line}: a quoted field is not closed"));
    }
    if !field.is_empty() || !record.is_empty() {
        record.push(field);
        records.push((start_line, record));
    }
    let mut it = records.into_iter();
    let (_, header) = it
        .next()
        .ok_or("1: empty file: the first line names the columns")?;
    let header: Vec<String> = header.into_iter().map(|h| h.trim().to_string()).collect();
    for (i, h) in header.iter().enumerate() {
        if !super::template::is_var_name(h) {
            return Err(format!(
                "1: column {} '{h}': a column name is letters, digits and '_'",
                i + 1
            ));
        }
        if header[..i].contains(h) {
            return Err(format!("1: column '{h}' is named twice"));
        }
    }
    let mut rows = Vec::new();
    for (l, r) in it {
        if r.len() != header.len() {
            return Err(format!(
                "{l}: {} fields where the header names {}",
                r.len(),
                header.len()
            ));
        }
        rows.push(r);
    }
    Ok((header, rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_with_quotes_and_line_ends() {
        let (h, rows) =
            parse_csv("user,password\r\nann,\"a,b\"\n\"bo\"\"b\",x\n\n\"multi\nline\",y").unwrap();
        assert_eq!(h, vec!["user", "password"]);
        assert_eq!(
            rows,
            vec![
                vec!["ann".to_string(), "a,b".to_string()],
                vec!["bo\"b".to_string(), "x".to_string()],
                vec!["multi\nline".to_string(), "y".to_string()],
            ]
        );
    }

    #[test]
    fn malformed_files_name_the_line() {
        assert_eq!(
            parse_csv("a,b\n1,2\n3\n").unwrap_err(),
            "3: 1 fields where the header names 2"
        );
        assert!(parse_csv("a,b\n\"1,2\n")
            .unwrap_err()
            .starts_with("2: a quoted"));
        assert!(parse_csv("a,a\n1,2\n").unwrap_err().contains("twice"));
        assert!(parse_csv("a b,c\n1,2\n").unwrap_err().contains("letters"));
        assert!(parse_csv("").is_err());
    }
}
