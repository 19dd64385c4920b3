//! `report --format json`: run info, the analysis recomputed from the steps, and the steps
//! without their histogram blobs (which only overload itself can read back).
use super::model::Exporter;
use super::model::RunReport;
use crate::analysis::Analysis;
use crate::store::RunInfo;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Version of this document's layout; bumped on incompatible changes.
pub const REPORT_FORMAT_VERSION: u32 = 1;

#[derive(Serialize)]
struct Doc<'a> {
    report_format_version: u32,
    name: String,
    complete: bool,
    /// Lines skipped while reading and other caveats.
    notes: &'a [String],
    run: &'a RunInfo,
    analysis: &'a Analysis,
    /// A run on stages: its knee and verdict (ramp.json).
    #[serde(skip_serializing_if = "Option::is_none")]
    ramp: Option<&'a crate::analysis::ramp::RampAnalysis>,
    steps: Vec<serde_json::Value>,
}

pub fn render(r: &RunReport) -> crate::Result<String> {
    let steps = r
        .steps
        .iter()
        .map(|s| {
            let mut v = serde_json::to_value(s)?;
            if let Some(o) = v.as_object_mut() {
                o.remove("response_time_hist");
                o.remove("hists");
            }
            Ok(v)
        })
        .collect::<Result<Vec<_>, serde_json::Error>>()
        .map_err(|e| crate::Error::runtime(format!("report.json: {e}")))?;
    let doc = Doc {
        report_format_version: REPORT_FORMAT_VERSION,
        name: r.name(),
        complete: r.complete(),
        notes: &r.notes,
        run: &r.data.info,
        analysis: &r.analysis,
        ramp: r.ramp.as_ref(),
        steps,
    };
    // serde_json writes NaN as null, so a broken figure cannot make the document invalid.
    let mut s = serde_json::to_string_pretty(&doc)
        .map_err(|e| crate::Error::runtime(format!("report.json: {e}")))?;
    s.push('\n');
    Ok(s)
}

/// `overload report --format json`.
pub struct JsonExporter;

impl Exporter for JsonExporter {
    fn default_name(&self) -> &'static str {
        "report.json"
    }

    fn serialize(&self, r: &RunReport, out: &Path) -> crate::Result<Vec<(PathBuf, Vec<u8>)>> {
        Ok(vec![(out.to_path_buf(), render(r)?.into_bytes())])
    }
}

#[cfg(test)]
mod tests {
    use super::super::testdata;
    use super::*;
    use crate::store::RunData;

    #[test]
    fn json_has_analysis_and_steps_without_histograms() {
        let mut steps = testdata::open_sweep();
        steps[0].summary.goodput = f64::NAN;
        let r = RunReport::from_data(RunData {
            dir: "/tmp/x".into(),
            info: testdata::info("t", "open", Some("p99<100ms")),
            steps,
            series: vec![],
            events: Vec::new(),
            skipped: vec![],
        });
        let s = render(&r).unwrap();
        assert!(!s.contains("HISTFAKE"));
        let v: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(v["analysis"]["saturation"]["offered"], 400.0);
        assert_eq!(v["analysis"]["capacity"], 300.0);
        assert_eq!(v["steps"].as_array().unwrap().len(), 5);
        assert_eq!(v["steps"][1]["throughput"], 199.0);
        assert!(v["steps"][0]["goodput"].is_null());
        assert_eq!(v["complete"], true);
    }
}
