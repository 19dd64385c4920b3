//! `--segment I/N` and `--start-at`: the flags that split one plan over several generator
//! hosts (run, sweep, capacity); see docs/scale-out.md.
use crate::plan::segment::{parse_start_at, Segment};
use crate::usecase::config::SegmentConfig;
use clap::Args;

#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Scale-out")]
pub struct SegmentArgs {
    /// Scale-out: send segment I of N of the plan (0-based): open loop arrivals I, I+N, … of
    /// the one schedule, closed loop a share of the users; `overload merge` adds the results.
    #[arg(long, value_name = "I/N", value_parser = Segment::parse)]
    pub segment: Option<Segment>,
    /// Start at this Unix time (seconds, `date +%s`), so every segment starts together; the
    /// steps then start on a fixed grid from it (warm-up + step + rest apart).
    #[arg(long, value_name = "UNIX_TIME", value_parser = parse_start_at)]
    pub start_at: Option<u64>,
}

impl From<SegmentArgs> for SegmentConfig {
    fn from(a: SegmentArgs) -> SegmentConfig {
        SegmentConfig {
            segment: a.segment.unwrap_or_default(),
            start_at_ms: a.start_at,
        }
    }
}
