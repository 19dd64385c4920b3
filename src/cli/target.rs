//! `overload target`: serve the embedded HTTP/1.1 target (see src/target/).
use clap::Args;

#[derive(Args, Debug)]
pub struct TargetArgs {}

pub fn run(_args: TargetArgs) -> crate::Result<i32> {
    Err(crate::Error::usage("target: not built yet"))
}
