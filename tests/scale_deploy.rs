//! The deployment files of deploy/: the Kubernetes manifests parse and carry the fields the
//! split plan relies on (kubectl's client dry-run needs a cluster's schema, so this is the
//! schema check), and every overload command line in them parses through the CLI into what
//! it claims: segment I of N, the common start, one results folder per segment.
use clap::Parser;
use overload::cli::{Cli, Command};
use yaml_rust2::{Yaml, YamlLoader};

fn docs(path: &str) -> Vec<Yaml> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{path}: {e}"));
    YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A field by its dotted path (`spec.template.spec`); `[N]` picks a list item.
fn at<'a>(y: &'a Yaml, path: &str) -> &'a Yaml {
    path.split('.')
        .fold(y, |y, key| match key.strip_suffix(']') {
            Some(k) => {
                let (name, i) = k.split_once('[').unwrap();
                &y[name][i.parse::<usize>().unwrap()]
            }
            None => &y[key],
        })
}

fn text<'a>(y: &'a Yaml, path: &str) -> &'a str {
    at(y, path)
        .as_str()
        .unwrap_or_else(|| panic!("{path}: not a string"))
}

/// The container's environment as NAME → value.
fn env(container: &Yaml) -> Vec<(String, String)> {
    container["env"]
        .as_vec()
        .unwrap()
        .iter()
        .map(|e| (text(e, "name").into(), text(e, "value").into()))
        .collect()
}

/// Kubernetes' `$(VAR)` expansion of `arg` with `vars`.
fn expand(arg: &str, vars: &[(String, String)]) -> String {
    vars.iter().fold(arg.to_string(), |a, (k, v)| {
        a.replace(&format!("$({k})"), v)
    })
}

#[test]
fn the_indexed_job_runs_segment_index_of_n() {
    let d = docs("deploy/kubernetes/segments-job.yaml");
    let job = d.iter().find(|y| text(y, "kind") == "Job").expect("a Job");
    let pvc = d
        .iter()
        .find(|y| text(y, "kind") == "PersistentVolumeClaim")
        .expect("a claim for the results");
    assert_eq!(text(job, "apiVersion"), "batch/v1");
    assert_eq!(text(job, "spec.completionMode"), "Indexed");
    let n = at(job, "spec.completions").as_i64().unwrap();
    assert_eq!(
        at(job, "spec.parallelism").as_i64(),
        Some(n),
        "all segments at once"
    );
    assert_eq!(
        at(job, "spec.backoffLimit").as_i64(),
        Some(0),
        "a late retry misses the grid"
    );
    assert_eq!(text(job, "spec.template.spec.restartPolicy"), "Never");
    let c = at(job, "spec.template.spec.containers[0]");
    let mount = text(c, "volumeMounts[0].mountPath");
    let volume = at(job, "spec.template.spec.volumes[0]");
    assert_eq!(text(c, "volumeMounts[0].name"), text(volume, "name"));
    assert_eq!(
        text(volume, "persistentVolumeClaim.claimName"),
        text(pvc, "metadata.name")
    );
    assert_eq!(text(pvc, "spec.accessModes[0]"), "ReadWriteMany");

    let mut vars = env(c);
    assert!(
        vars.iter()
            .any(|(k, v)| k == "SEGMENTS" && v == &n.to_string()),
        "SEGMENTS = completions: {vars:?}"
    );
    let start_at = vars
        .iter()
        .find(|(k, _)| k == "START_AT")
        .unwrap()
        .1
        .clone();
    let mut seen = Vec::new();
    for index in 0..n {
        vars.retain(|(k, _)| k != "JOB_COMPLETION_INDEX");
        vars.push(("JOB_COMPLETION_INDEX".into(), index.to_string()));
        let argv: Vec<String> = std::iter::once(text(c, "command[0]").to_string())
            .chain(
                c["args"]
                    .as_vec()
                    .unwrap()
                    .iter()
                    .map(|a| expand(a.as_str().unwrap(), &vars)),
            )
            .collect();
        let cfg = match Cli::try_parse_from(&argv).unwrap().command {
            Command::Sweep(a) => a.config().unwrap(),
            _ => panic!("not a sweep: {argv:?}"),
        };
        let seg = cfg.segment.segment;
        assert_eq!((i64::from(seg.index), i64::from(seg.count)), (index, n));
        assert_eq!(
            cfg.segment.start_at_ms,
            Some(start_at.parse::<u64>().unwrap() * 1000)
        );
        let out = cfg.output.out.unwrap();
        assert!(out.starts_with(mount), "{out:?} outside {mount}");
        seen.push(out);
    }
    seen.dedup();
    assert_eq!(seen.len() as i64, n, "one results folder per segment");
}

#[test]
fn the_merge_job_reads_the_segments_volume() {
    let d = docs("deploy/kubernetes/merge-job.yaml");
    let c = at(&d[0], "spec.template.spec.containers[0]");
    let script = text(c, "command[2]");
    assert!(script.contains("overload merge /results/seg-* --out /results/merged"));
    assert_eq!(text(c, "volumeMounts[0].mountPath"), "/results");
    assert_eq!(
        text(
            &d[0],
            "spec.template.spec.volumes[0].persistentVolumeClaim.claimName"
        ),
        "overload-results"
    );
}

#[test]
fn the_agent_unit_runs_a_command_overload_accepts() {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy/systemd/overload-agent.service");
    let unit = std::fs::read_to_string(p).unwrap();
    let exec = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("ExecStart");
    let argv: Vec<&str> = exec.split_whitespace().collect();
    match Cli::try_parse_from(&argv).unwrap().command {
        Command::Agent(a) => {
            assert!(a.token_file.starts_with("/etc/overload"));
            assert!(a.allow_remote);
        }
        _ => panic!("not the agent: {exec}"),
    }
    for section in ["[Unit]", "[Service]", "[Install]"] {
        assert!(unit.contains(section), "{section}");
    }
}
