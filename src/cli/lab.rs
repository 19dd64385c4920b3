//! `overload lab`: bring up the studies' stacks on loopback (see src/lab/).
use clap::Args;

#[derive(Args, Debug)]
pub struct LabArgs {}

pub fn run(_args: LabArgs) -> crate::Result<i32> {
    Err(crate::Error::usage("lab: not built yet"))
}
