//! `overload compare DIR DIR...`: several runs overlaid in one HTML page, and a table.
use crate::report::compare;
use crate::report::{export, RunReport};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug, Clone)]
pub struct CompareArgs {
    /// Results folders, all open loop or all closed loop; ratios are to the first.
    #[arg(required = true, num_args = 2.., value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// The HTML page to write.
    #[arg(long, value_name = "FILE", default_value = "compare.html")]
    pub out: PathBuf,
    /// Names for the runs, in order (default: each run's name).
    #[arg(long, value_delimiter = ',', value_name = "A,B,...")]
    pub names: Option<Vec<String>>,
}

pub fn run(a: CompareArgs) -> crate::Result<i32> {
    export::check_parent(&a.out)?;
    let runs = a
        .dirs
        .iter()
        .map(|d| RunReport::load(d))
        .collect::<crate::Result<Vec<_>>>()?;
    let names = compare::names(&runs, a.names.as_deref())?;
    compare::check_modes(&runs, &names)?;
    export::write_file(&a.out, &compare::html(&runs, &names))?;
    crate::out!("{}", compare::table(&runs, &names));
    for (r, n) in runs.iter().zip(&names) {
        for note in &r.notes {
            crate::eoutln!("overload: note: {n}: {note}");
        }
    }
    crate::outln!("\n{}", crate::fsutil::shown(&a.out));
    Ok(0)
}
