use clap::Args;
#[derive(Args, Debug)]
pub struct DemoArgs {}
pub fn run(_a: DemoArgs) -> crate::Result<i32> { Ok(0) }
