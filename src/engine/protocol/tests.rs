//! The protocol seam driven end to end through a worker over scripted transports.
use super::*;

/// Each protocol counts under its own label, and the `Wire`s agree with the value.
#[test]
fn each_protocol_counts_under_its_label() {
    let h2 = Protocol::Http2(Http2 { streams: 8 });
    assert_eq!(crate::metrics::recorder::PROTOCOLS[Protocol::Http1.index()], "1.1");
    assert_eq!(crate::metrics::recorder::PROTOCOLS[h2.index()], "2");
    type Tcp = crate::engine::transport::Tcp;
    assert_eq!(<http1::H1 as Wire<Tcp>>::INDEX, Protocol::Http1.index());
    assert_eq!(<http2::H2<Tcp> as Wire<Tcp>>::INDEX, h2.index());
    assert_eq!(h2.connections_for(17), 3);
    assert_eq!(Protocol::Http1.connections_for(17), 17);
}
