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

/// The rows, held as one text and the end of each cell in it: a cell costs its bytes and 4
/// more, whatever its length (a `String` per cell cost 30 times the file for short cells).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Feeder {
    pub columns: Vec<String>,
    /// Every cell's text, row after row.
    text: String,
    /// `ends[k]`: where cell k ends in `text` (cell k of row r is k = r × columns + column).
    ends: Vec<u32>,
    pub per: RowPer,
}

impl Feeder {
    /// Reads `path`; errors name the file and line.
    pub fn load(path: &Path, per: RowPer) -> Result<Feeder, String> {
        let shown = crate::fsutil::shown(path);
        let bytes = crate::fsutil::read_capped(path, MAX_FEEDER_FILE, "feeder")?;
        let text =
            String::from_utf8(bytes).map_err(|_| format!("{shown}: the CSV is not UTF-8 text"))?;
        let (columns, text, ends) = parse_csv(&text).map_err(|e| format!("{shown}:{e}"))?;
        if ends.is_empty() {
            return Err(format!("{shown}: no data row under the header line"));
        }
        Ok(Feeder {
            columns,
            text,
            ends,
            per,
        })
    }

    /// Data rows (at least one).
    pub fn rows(&self) -> usize {
        self.ends.len() / self.columns.len()
    }

    /// Row `r`'s cells, in column order.
    pub fn row(&self, r: usize) -> impl Iterator<Item = &str> {
        let n = self.columns.len();
        (r * n..(r + 1) * n).map(move |k| {
            let start = if k == 0 { 0 } else { self.ends[k - 1] as usize };
            &self.text[start..self.ends[k] as usize]
        })
    }
}

/// The header's names, and the cells' text with the end of each cell in it.
type Parsed = (Vec<String>, String, Vec<u32>);

/// Parses CSV text (RFC 4180: `"` quotes a field, `""` inside is a quote): the header's
/// names and every data row's cells, each row as long as the header. Errors start with the
/// line number. Byte-wise: `"`, `,`, CR and LF are ASCII, so they never split a character.
pub fn parse_csv(text: &str) -> Result<Parsed, String> {
    let b = text.as_bytes();
    // Offsets are u32: the feeder cap keeps every file far below 4 GiB.
    debug_assert!(b.len() < u32::MAX as usize);
    let mut header: Option<Vec<String>> = None;
    let mut cells = String::with_capacity(b.len());
    // Sized once: a cell ends at each comma or line feed (or the end), so no doubling.
    let most = b.iter().filter(|&&c| c == b',' || c == b'\n').count() + 1;
    let mut ends: Vec<u32> = Vec::with_capacity(most);
    // Cells of the record being read: its first cell's index in `ends`.
    let mut record_start = 0;
    let mut line = 1;
    let mut start_line = 1;
    let mut i = 0;
    // Appends `b[from..to]` (whole characters: the bounds are at ASCII bytes) to the cells.
    let push = |cells: &mut String, from: usize, to: usize| cells.push_str(&text[from..to]);
    loop {
        // One field, from `i`.
        if b.get(i) == Some(&b'"') {
            i += 1;
            loop {
                let run = b[i..].iter().position(|&c| c == b'"' || c == b'\n');
                match run {
                    None => return Err(format!("{start_line}: a quoted field is not closed")),
                    Some(k) if b[i + k] == b'\n' => {
                        push(&mut cells, i, i + k + 1);
                        line += 1;
                        i += k + 1;
                    }
                    Some(k) => {
                        push(&mut cells, i, i + k);
                        i += k + 1;
                        if b.get(i) == Some(&b'"') {
                            cells.push('"');
                            i += 1;
                        } else {
                            break;
                        }
                    }
                }
            }
        }
        // The unquoted rest of the field (all of it, when not quoted), up to `,` or the line end.
        let k = b[i..]
            .iter()
            .position(|&c| c == b',' || c == b'\n')
            .unwrap_or(b.len() - i);
        let mut to = i + k;
        let at_line_end = to >= b.len() || b[to] == b'\n';
        if at_line_end && to > i && b[to - 1] == b'\r' {
            to -= 1;
        }
        push(&mut cells, i, to);
        ends.push(cells.len() as u32);
        i += k;
        if !at_line_end {
            i += 1; // the comma
            continue;
        }
        // A record ends; a blank line is none.
        let n = ends.len() - record_start;
        let blank = n == 1
            && cells.len()
                == ends
                    .get(record_start.wrapping_sub(1))
                    .map_or(0, |&e| e as usize);
        if blank {
            ends.truncate(record_start);
        } else if let Some(h) = &header {
            if n != h.len() {
                return Err(format!(
                    "{start_line}: {n} fields where the header names {}",
                    h.len()
                ));
            }
            record_start = ends.len();
        } else {
            header = Some(take_header(&mut cells, &mut ends)?);
        }
        if i >= b.len() {
            break;
        }
        i += 1; // the line feed
        line += 1;
        start_line = line;
        if i >= b.len() {
            break;
        }
    }
    let header = header.ok_or("1: empty file: the first line names the columns")?;
    cells.shrink_to_fit();
    ends.shrink_to_fit();
    Ok((header, cells, ends))
}

/// The first record, read into `cells` and `ends`, as the checked column names; `cells` and
/// `ends` are left empty for the data rows.
fn take_header(cells: &mut String, ends: &mut Vec<u32>) -> Result<Vec<String>, String> {
    let mut names = Vec::with_capacity(ends.len());
    let mut start = 0;
    for &e in ends.iter() {
        names.push(cells[start..e as usize].trim().to_string());
        start = e as usize;
    }
    cells.clear();
    ends.clear();
    // A set, not a scan of the names before each: a header of 100k columns is checked at once.
    let mut seen = std::collections::HashSet::with_capacity(names.len());
    for (i, h) in names.iter().enumerate() {
        if !super::template::is_var_name(h) {
            return Err(format!(
                "1: column {} '{h}': a column name is letters, digits and '_'",
                i + 1
            ));
        }
        if !seen.insert(h.as_str()) {
            return Err(format!("1: column '{h}' is named twice"));
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_with_quotes_and_line_ends() {
        let (h, text, ends) =
            parse_csv("user,password\r\nann,\"a,b\"\n\"bo\"\"b\",x\n\n\"multi\nline\",y").unwrap();
        assert_eq!(h, vec!["user", "password"]);
        let f = Feeder {
            columns: h,
            text,
            ends,
            per: RowPer::User,
        };
        let rows: Vec<Vec<&str>> = (0..f.rows()).map(|r| f.row(r).collect()).collect();
        assert_eq!(
            rows,
            vec![
                vec!["ann", "a,b"],
                vec!["bo\"b", "x"],
                vec!["multi\nline", "y"],
            ]
        );
        // Empty cells, CRLF after a quoted cell, a last line without its line feed.
        let (h, text, ends) = parse_csv("a,b,c\n,,\n\"x\",y,\r\nz,,w").unwrap();
        let f = Feeder {
            columns: h,
            text,
            ends,
            per: RowPer::User,
        };
        let rows: Vec<Vec<&str>> = (0..f.rows()).map(|r| f.row(r).collect()).collect();
        assert_eq!(rows, [["", "", ""], ["x", "y", ""], ["z", "", "w"]]);
    }

    #[test]
    fn malformed_files_name_the_line() {
        assert_eq!(
            parse_csv("a,b\n1,2\n3\n").unwrap_err(),
            "3: 1 fields where the header names 2"
        );
        assert_eq!(
            parse_csv("a,b,c\n,,\n\"x\"\r\n").unwrap_err(),
            "3: 1 fields where the header names 3"
        );
        assert_eq!(
            parse_csv("a,b\n\"1\n2\",3\n4\n").unwrap_err(),
            "4: 1 fields where the header names 2",
            "a quoted line feed counts as a line"
        );
        assert!(parse_csv("a,b\n\"1,2\n")
            .unwrap_err()
            .starts_with("2: a quoted"));
        assert!(parse_csv("a,a\n1,2\n").unwrap_err().contains("twice"));
        assert!(parse_csv("a b,c\n1,2\n").unwrap_err().contains("letters"));
        assert!(parse_csv("").is_err());
        assert!(parse_csv("\n\n").is_err());
    }
}
