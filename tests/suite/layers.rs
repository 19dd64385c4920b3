//! The import rules of docs/architecture.md ("Who may import whom") checked against the code:
//! the test reads the doc's table itself (the one source, so the two cannot drift apart),
//! reads every `crate::` path of src/ outside test code, and fails on an import the table
//! does not allow, on a circle between modules, on clap outside `cli`, and on a module the
//! table does not name. The checker's own tests run it on scripted tables and files.
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![
        the_code_keeps_the_import_rules_of_the_architecture_doc,
        the_table_is_read_with_its_words,
        an_import_the_table_forbids_fails_and_allowed_ones_pass,
        a_circle_between_modules_fails_even_when_the_table_allows_it
    ]
}

type Allowed = BTreeMap<String, BTreeSet<String>>;

const HEADING: &str = "## Who may import whom";
const LEAVES: &str = "Leaf modules every floor may use:";

/// The table's rows as module → the modules it may import, the leaf modules (named in the
/// paragraph before the table) always among them. Its words: module names,
/// "nothing of the crate", "everything above" (the modules of the rows above), "the leaf
/// modules" (the paragraph's backticked names), "the floors below" (what the modules named
/// before it in the row may import, and so on down). Parentheses and emphasis are remarks.
fn parse_rules(doc: &str) -> Result<Allowed, String> {
    let at = doc.find(HEADING).ok_or(format!("no '{HEADING}' heading"))?;
    let rows: Vec<(Vec<String>, String)> = doc[at..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2) // the header and its separator
        .map(|l| {
            let cells: Vec<&str> = l.trim().trim_matches('|').split('|').collect();
            let names = cells[0].split(',').map(|n| n.trim().to_string()).collect();
            (names, cells.get(1).unwrap_or(&"").to_string())
        })
        .collect();
    if rows.is_empty() {
        return Err(format!("no table under '{HEADING}'"));
    }
    let known: BTreeSet<String> = rows.iter().flat_map(|r| r.0.clone()).collect();
    let leaves: BTreeSet<String> = match doc.find(LEAVES) {
        Some(i) => {
            let para = &doc[i..];
            let para = &para[..para.find("\n\n").unwrap_or(para.len())];
            para.split('`')
                .skip(1)
                .step_by(2)
                .filter(|w| known.contains(*w))
                .map(str::to_string)
                .collect()
        }
        None => BTreeSet::new(),
    };
    let mut allowed = Allowed::new();
    let mut above: BTreeSet<String> = BTreeSet::new();
    for (names, cell) in &rows {
        let text = remarks_out(cell);
        let mut may = BTreeSet::new();
        if text.trim() != "nothing of the crate" {
            let words = text
                .split([',', ';'])
                .flat_map(|w| w.split(" and "))
                .map(|w| {
                    w.trim()
                        .trim_start_matches("and ")
                        .trim_start_matches("plus ")
                })
                .map(str::trim)
                .filter(|w| !w.is_empty());
            for w in words {
                match w {
                    "everything above" => may.extend(above.iter().cloned()),
                    "the leaf modules" => may.extend(leaves.iter().cloned()),
                    "the floors below" => {
                        let mut todo: Vec<String> = may.iter().cloned().collect();
                        while let Some(m) = todo.pop() {
                            for d in allowed.get(&m).into_iter().flatten() {
                                if may.insert(d.clone()) {
                                    todo.push(d.clone());
                                }
                            }
                        }
                    }
                    m if known.contains(m) => {
                        may.insert(m.to_string());
                    }
                    other => return Err(format!("row {names:?}: unknown word '{other}'")),
                }
            }
        }
        // Every floor may use the leaf modules (a circle among them is caught apart).
        may.extend(leaves.iter().cloned());
        for n in names {
            let mut own = may.clone();
            own.remove(n);
            allowed.insert(n.clone(), own);
        }
        above.extend(names.iter().cloned());
    }
    Ok(allowed)
}

/// The cell without its remarks: text in parentheses, `**…**`, backticks.
fn remarks_out(cell: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    for c in cell.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    while let Some(i) = out.find("**") {
        let j = out[i + 2..].find("**").map_or(out.len(), |j| i + 2 + j + 2);
        out.replace_range(i..j, "");
    }
    out.replace('`', "")
}

/// The module a file of src/ belongs to (`src/observe/net.rs` → observe); None for the crate
/// root and the binary.
fn module_of(path: &str) -> Option<String> {
    let rest = path.strip_prefix("src/")?;
    match rest.split_once('/') {
        Some((dir, _)) => Some(dir.to_string()),
        None if rest == "lib.rs" || rest == "main.rs" => None,
        None => rest.strip_suffix(".rs").map(str::to_string),
    }
}

/// A file's text without its test code (a `#[cfg(test)]` module and what follows it; whole
/// test files) and its comments (doc links are no imports).
fn code_of(path: &str, text: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    if name == "tests.rs" || name.ends_with("_tests.rs") || path.contains("/tests/") {
        return String::new();
    }
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::new();
    let mut skip_decl = false;
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_start();
        if std::mem::take(&mut skip_decl) {
            continue;
        }
        let next = lines[i + 1..]
            .iter()
            .map(|n| n.trim_start())
            .find(|n| !n.is_empty());
        if t.starts_with("#[cfg(test)]") && next.is_some_and(|n| n.starts_with("mod ")) {
            // `mod tests;` is its own file (skipped as a test file); `mod tests {` runs to
            // the end of this one.
            if next.is_some_and(|n| n.trim_end().ends_with(';')) {
                skip_decl = true;
                continue;
            }
            break;
        }
        if t.starts_with("//") {
            continue;
        }
        out.push_str(l.split(" // ").next().unwrap_or(l));
        out.push('\n');
    }
    out
}

/// The first segment of every `crate::` path in `code` (each of a `crate::{a, b::c}` group).
fn crate_refs(code: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut refs = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        // `$crate::` in a macro is the same path; `my_crate::` is another crate.
        let before = rest[..i].chars().next_back();
        let after = &rest[i + "crate::".len()..];
        rest = after;
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(group) = after.strip_prefix('{') {
            let mut depth = 0usize;
            let mut start = 0;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        refs.push(ident(&group[start..j]));
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        refs.push(ident(&group[start..j]));
                        start = j + 1;
                    }
                    _ => {}
                }
            }
        } else {
            refs.push(ident(after));
        }
    }
    refs.retain(|r| !r.is_empty());
    refs
}

/// What the code breaks of the rules, one line each: imports the table does not allow,
/// crate items it cannot place, modules without a row, clap outside cli, circles.
fn check(allowed: &Allowed, files: &[(String, String)]) -> Vec<String> {
    let mut bad = Vec::new();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut unnamed = BTreeSet::new();
    for (path, text) in files {
        let Some(m) = module_of(path) else { continue };
        if !allowed.contains_key(&m) {
            unnamed.insert(m.clone());
            continue;
        }
        let code = code_of(path, text);
        if m != "cli" && (code.contains("clap::") || code.contains("use clap")) {
            bad.push(format!("{path}: {m} imports clap; only cli may"));
        }
        for r in crate_refs(&code) {
            let to = match r.as_str() {
                "Error" | "Result" => "error".to_string(),
                "out" | "outln" | "eout" | "eoutln" => "console".to_string(),
                x if allowed.contains_key(x) => x.to_string(),
                x => {
                    bad.push(format!("{path}: crate::{x} is no module of the table"));
                    continue;
                }
            };
            if to == m {
                continue;
            }
            let line = format!(
                "{path}: {m} imports {to}, which docs/architecture.md's table does not allow"
            );
            if !allowed[&m].contains(&to) && !bad.contains(&line) {
                bad.push(line);
            }
            graph.entry(m.clone()).or_default().insert(to);
        }
    }
    for m in unnamed {
        bad.push(format!(
            "src/{m}: a module docs/architecture.md's table does not name"
        ));
    }
    if let Some(c) = circle(&graph) {
        bad.push(format!("a circle: {}", c.join(" → ")));
    }
    bad
}

/// A path of imports that comes back to where it began, if any.
fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        g: &BTreeMap<String, BTreeSet<String>>,
        m: &str,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == m) {
            let mut c = path[i..].to_vec();
            c.push(m.to_string());
            return Some(c);
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.to_string());
        for d in g.get(m).into_iter().flatten() {
            if let Some(c) = visit(g, d, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(m.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|m| visit(graph, m, &mut Vec::new(), &mut done))
}

fn source_files(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            source_files(&p, root, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            out.push((rel, std::fs::read_to_string(&p).unwrap()));
        }
    }
}

fn the_code_keeps_the_import_rules_of_the_architecture_doc() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let allowed = parse_rules(&doc).unwrap_or_else(|e| panic!("docs/architecture.md: {e}"));
    let mut files = Vec::new();
    source_files(&root.join("src"), root, &mut files);
    // Every row names a module that exists.
    for m in allowed.keys() {
        assert!(
            files.iter().any(|(p, _)| module_of(p).as_ref() == Some(m)),
            "docs/architecture.md names '{m}', which src/ does not have"
        );
    }
    let bad = check(&allowed, &files);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

const TABLE: &str =
    "intro\n\nLeaf modules every floor may use: `clock` (time), `error`, `units`.\n\n\
## Who may import whom\n\n\
| module | may import (crate modules) |\n|---|---|\n\
| clock, error, units | nothing of the crate |\n\
| store | units (formatting) |\n\
| analysis | store (the `report` floor is above) |\n\
| report | analysis, and the floors below |\n\
| usecase | everything above |\n\
| cli | usecase and the leaf modules; **only `cli` imports clap** |\n\nafter\n";

fn files(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect()
}

fn the_table_is_read_with_its_words() {
    let a = parse_rules(TABLE).unwrap();
    let set = |m: &str| a[m].iter().map(String::as_str).collect::<Vec<_>>();
    // The leaf modules, for every floor (not for themselves).
    assert_eq!(set("clock"), ["error", "units"]);
    assert_eq!(set("store"), ["clock", "error", "units"]);
    assert_eq!(
        set("analysis"),
        ["clock", "error", "store", "units"],
        "remarks are no modules"
    );
    assert_eq!(
        set("report"),
        ["analysis", "clock", "error", "store", "units"]
    );
    assert_eq!(
        set("usecase"),
        ["analysis", "clock", "error", "report", "store", "units"]
    );
    assert_eq!(set("cli"), ["clock", "error", "units", "usecase"]);
    let e = parse_rules(&TABLE.replace("| store | units", "| store | unitz")).unwrap_err();
    assert!(e.contains("unknown word 'unitz'"), "{e}");
    assert!(parse_rules("no table").is_err());
}

fn an_import_the_table_forbids_fails_and_allowed_ones_pass() {
    let a = parse_rules(TABLE).unwrap();
    let ok = files(&[
        ("src/lib.rs", "pub mod store;"),
        ("src/units.rs", "pub fn f() {}"),
        (
            "src/store/mod.rs",
            "use crate::units::f;\nuse crate::{Error, Result};",
        ),
        (
            "src/report/mod.rs",
            "use crate::{analysis::x, store::{a, b}};\n// see crate::usecase, a comment\n\
             #[cfg(test)]\nmod tests {\n    use crate::usecase::Fixture;\n}\n",
        ),
        ("src/store/tests.rs", "use crate::report::fixtures;"),
        (
            "src/analysis/mod.rs",
            "#[cfg(test)]\nmod tests;\nuse crate::store::Step;",
        ),
    ]);
    // Test code, comments and the crate root are not imports; `crate::Error` is `error`'s.
    assert_eq!(check(&a, &ok), Vec::<String>::new());
    let up = files(&[
        (
            "src/store/mod.rs",
            "fn f() { let _ = crate::report::render(); }",
        ),
        ("src/analysis/x.rs", "use clap::Parser;"),
        ("src/gone/mod.rs", ""),
        // Code after a `mod tests;` declaration is still code.
        (
            "src/units.rs",
            "#[cfg(test)]\nmod tests;\nuse crate::store::X;",
        ),
    ]);
    let bad = check(&a, &up);
    assert!(
        bad.iter().any(|b| b
            == "src/store/mod.rs: store imports report, which docs/architecture.md's table \
                does not allow"),
        "{bad:?}"
    );
    assert!(
        bad.iter().any(|b| b.contains("analysis imports clap")),
        "{bad:?}"
    );
    assert!(bad.iter().any(|b| b.contains("src/gone")), "{bad:?}");
    assert!(
        bad.iter().any(|b| b.contains("units imports store")),
        "{bad:?}"
    );
}

fn a_circle_between_modules_fails_even_when_the_table_allows_it() {
    let loose = "## Who may import whom\n\n| module | may import |\n|---|---|\n\
                 | a | b |\n| b | a |\n";
    let a = parse_rules(loose).unwrap();
    let bad = check(
        &a,
        &files(&[
            ("src/a.rs", "use crate::b::X;"),
            ("src/b/mod.rs", "use crate::a::Y;"),
        ]),
    );
    assert_eq!(bad, ["a circle: a → b → a"]);
}
