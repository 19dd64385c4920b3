//! `overload merge DIR… --out DIR`: add the results folders of a split plan's segments
//! (`--segment I/N` on N generators) into one, exactly; see docs/scale-out.md.
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug, Clone)]
pub struct MergeArgs {
    /// The segments' results folders (one per --segment I/N, any order).
    #[arg(value_name = "DIR", required = true)]
    pub dirs: Vec<PathBuf>,
    /// The merged results folder (must not hold results yet).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

pub fn run(a: MergeArgs) -> crate::Result<i32> {
    let outcome = crate::merge::run(&a.dirs, &a.out)?;
    crate::out!("{outcome}");
    // Merged and written: an incomplete plan is said in the output and in run.json.
    Ok(0)
}
