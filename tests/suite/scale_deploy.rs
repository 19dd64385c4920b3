//! The deployment files of deploy/: the Kubernetes manifests parse and carry the fields the
//! split plan relies on (kubectl's client dry-run needs a cluster's schema, so this is the
//! schema check), and every overload command line in them parses through the CLI into what
//! it claims: segment I of N, the common start, one results folder per segment; for the
//! controller mode, agents locked down as docs/scale-out.md says and a generators file that
//! names them through the Service, with files where the pods mount them.
use clap::Parser;
use overload::cli::{Cli, Command};
use yaml_rust2::{Yaml, YamlLoader};

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![
        the_indexed_job_runs_segment_index_of_n,
        the_merge_job_reads_the_segments_volume,
        the_agent_unit_runs_a_command_overload_accepts,
        the_controller_mode_deploys_locked_down_agents_the_controller_finds
    ]
}

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

fn kind<'a>(d: &'a [Yaml], k: &str) -> &'a Yaml {
    d.iter()
        .find(|y| text(y, "kind") == k)
        .unwrap_or_else(|| panic!("no {k}"))
}

/// Where a pod mounts the volume that holds `secret`'s (or the config map's) files.
fn mount_of<'a>(pod: &'a Yaml, container: &'a Yaml, source: &str, name: &str) -> &'a str {
    let volume = pod["volumes"]
        .as_vec()
        .unwrap()
        .iter()
        .find(|v| {
            let by = &v[source];
            [&by["secretName"], &by["name"], &by["claimName"]]
                .iter()
                .any(|n| n.as_str() == Some(name))
        })
        .unwrap_or_else(|| panic!("no volume of {source} {name}"));
    container["volumeMounts"]
        .as_vec()
        .unwrap()
        .iter()
        .find(|m| m["name"] == volume["name"])
        .map(|m| text(m, "mountPath"))
        .unwrap_or_else(|| panic!("{name} not mounted"))
}

fn argv(c: &Yaml, vars: &[(String, String)]) -> Vec<String> {
    std::iter::once(text(c, "command[0]").to_string())
        .chain(
            c["args"]
                .as_vec()
                .unwrap()
                .iter()
                .map(|a| expand(a.as_str().unwrap(), vars)),
        )
        .collect()
}

fn the_controller_mode_deploys_locked_down_agents_the_controller_finds() {
    let d = docs("deploy/kubernetes/controller.yaml");
    let (svc, dep, job, cm, np) = (
        kind(&d, "Service"),
        kind(&d, "Deployment"),
        kind(&d, "Job"),
        kind(&d, "ConfigMap"),
        kind(&d, "NetworkPolicy"),
    );
    assert!(
        d.iter().all(|y| text(y, "kind") != "Secret"),
        "no secret in the manifests"
    );
    // The headless Service selects the agents' pods and names their port.
    assert_eq!(
        text(svc, "spec.clusterIP"),
        "None",
        "headless: one address per pod"
    );
    let labels = &at(dep, "spec.template.metadata.labels");
    for (k, v) in at(svc, "spec.selector").as_hash().unwrap() {
        assert_eq!(&labels[k.as_str().unwrap()], v, "selector {k:?}");
    }
    assert_eq!(
        at(dep, "spec.selector.matchLabels"),
        at(svc, "spec.selector")
    );
    let pod = at(dep, "spec.template.spec");
    let agent = at(pod, "containers[0]");
    assert_eq!(
        text(agent, "ports[0].name"),
        text(svc, "spec.ports[0].targetPort")
    );
    let port = at(agent, "ports[0].containerPort").as_i64().unwrap();
    assert_eq!(at(svc, "spec.ports[0].port").as_i64(), Some(port));
    assert_eq!(
        text(agent, "env[0].valueFrom.fieldRef.fieldPath"),
        "status.podIP"
    );

    // The agent: generation on, the pod IP only, a fixed target and limits, TLS from the
    // Secret's files, the token from its own.
    let vars = vec![("POD_IP".to_string(), "10.1.2.3".to_string())];
    let a = match Cli::try_parse_from(argv(agent, &vars)).unwrap().command {
        Command::Agent(a) => a,
        _ => panic!("not the agent"),
    };
    assert_eq!(a.listen, format!("10.1.2.3:{port}"));
    assert!(a.allow_remote && a.generate.generate);
    assert_eq!(a.generate.allow_target.len(), 1);
    let target = a.generate.allow_target[0].clone();
    let g = &a.generate;
    assert!(g.max_rate > 0.0 && g.max_connections > 0 && g.max_duration != "5m");
    let token_dir = mount_of(pod, agent, "secret", "overload-generator-token");
    let tls_dir = mount_of(pod, agent, "secret", "overload-generator-tls");
    assert_eq!(a.token_file, std::path::Path::new(token_dir).join("token"));
    assert_eq!(
        g.tls_cert.as_deref(),
        Some(std::path::Path::new(tls_dir).join("tls.crt").as_path())
    );
    assert!(g.tls_key.as_ref().unwrap().starts_with(tls_dir));
    for m in pod["volumes"].as_vec().unwrap() {
        if let Some(mode) = m["secret"]["defaultMode"].as_i64() {
            assert_eq!(mode & 0o007, 0, "secrets unreadable by other users");
        }
    }

    // Only the controller's pods reach the agents' port.
    let np_pods = &at(np, "spec.podSelector.matchLabels");
    let job_labels = &at(job, "spec.template.metadata.labels");
    for (k, v) in np_pods.as_hash().unwrap() {
        assert_eq!(&labels[k.as_str().unwrap()], v);
    }
    let from = &at(np, "spec.ingress[0].from[0].podSelector.matchLabels");
    for (k, v) in from.as_hash().unwrap() {
        assert_eq!(&job_labels[k.as_str().unwrap()], v);
    }
    assert_eq!(at(np, "spec.ingress[0].ports[0].port").as_i64(), Some(port));

    // The controller: a sweep of the agent's allowed target, over the listed generators.
    let jpod = at(job, "spec.template.spec");
    let ctl = at(jpod, "containers[0]");
    let args = argv(ctl, &[]);
    let sweep = match Cli::try_parse_from(&args).unwrap().command {
        Command::Sweep(s) => s,
        _ => panic!("not a sweep: {args:?}"),
    };
    let file = sweep.generators.generators.clone().expect("--generators");
    let list_dir = mount_of(jpod, ctl, "configMap", text(cm, "metadata.name"));
    let key = file
        .strip_prefix(list_dir)
        .expect("the list from the config map");
    let list = text(cm, &format!("data.{}", key.display()));
    let lines: Vec<&str> = list.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{list}");
    let mut words = lines[0].split_whitespace();
    let url = words.next().unwrap();
    assert_eq!(
        url,
        format!("https://{}:{port}", text(svc, "metadata.name")),
        "the Service's name, TLS"
    );
    let fields: std::collections::HashMap<&str, &str> =
        words.map(|w| w.split_once('=').unwrap()).collect();
    assert_eq!(
        fields["addresses"].parse::<i64>().ok(),
        at(dep, "spec.replicas").as_i64(),
        "addresses = replicas"
    );
    let ctl_token = mount_of(jpod, ctl, "secret", "overload-generator-token");
    let ctl_tls = mount_of(jpod, ctl, "secret", "overload-generator-tls");
    assert_eq!(fields["token-file"], format!("{ctl_token}/token"));
    assert_eq!(fields["cacert"], format!("{ctl_tls}/tls.crt"));
    // The controller gets the agents' certificate, never their key.
    let items = jpod["volumes"]
        .as_vec()
        .unwrap()
        .iter()
        .find(|v| v["secret"]["secretName"].as_str() == Some("overload-generator-tls"))
        .unwrap()["secret"]["items"]
        .as_vec()
        .expect("only chosen items");
    assert!(items.iter().all(|i| i["key"].as_str() == Some("tls.crt")));
    // The URL the controller sends is the agents' allowed target.
    let cfg = sweep.config().unwrap();
    let sent = &cfg.request.urls[0];
    assert!(
        sent.starts_with(&format!("http://{target}/")),
        "{sent} is not {target}"
    );
    assert!(cfg.output.out.unwrap().starts_with(mount_of(
        jpod,
        ctl,
        "persistentVolumeClaim",
        "overload-controller-results"
    )));
}
