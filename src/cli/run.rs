use clap::Args;
#[derive(Args, Debug)]
pub struct RunArgs {}
pub fn run(_a: RunArgs) -> crate::Result<i32> { Ok(0) }
