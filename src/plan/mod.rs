//! The plan: what to send (the request mix) and when (the load model).
pub mod access_log;
pub mod bracket;
pub mod naming;
pub mod origin;
pub mod request;
pub mod segment;
pub mod stages;
pub mod steps;
pub mod urls_file;

pub use request::{check_headers, parse_header, parse_headers, parse_method, RequestSpec, Url};
pub use segment::Segment;
pub use urls_file::read_urls_file;
