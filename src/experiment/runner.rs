//! Runs an experiment: for every run, (re)start the server (a lab stack, or a `setup`
//! command and its readiness URL), send the warm-up round, run the load plan as a normal
//! `overload sweep|capacity` into `EXPDIR/<config>-r<k>/`, stop the server, record the run
//! as finished. Everything is bounded in time: readiness and teardown have deadlines, and
//! the load plan's steps have fixed lengths and per-request timeouts.
use super::plan::{self, Run};
use super::resume::{RunState, ServerState, State};
use super::spec::{Config, Experiment, Server};
use crate::lab::{self, process, LabOptions, PartInfo, Stack, StackSpec};
use crate::Error;
use clap::Parser;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a teardown command may take before it is killed.
const TEARDOWN_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a setup server gets between SIGTERM and SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Parses a generated command line with the real CLI, so a run is exactly what the
/// equivalent `overload sweep …` typed by hand would do.
#[derive(Parser)]
#[command(no_binary_name = true)]
struct Cmd {
    #[command(subcommand)]
    c: crate::cli::Command,
}

/// A server that runs.
enum Started {
    Lab {
        stack: Stack,
        /// MariaDB started for this run (with its own knobs), stopped after it.
        db: bool,
        opts: LabOptions,
        url: String,
    },
    Command {
        part: PartInfo,
        child: Child,
        url: String,
    },
}

impl Started {
    fn url(&self) -> &str {
        match self {
            Started::Lab { url, .. } | Started::Command { url, .. } => url,
        }
    }
}

fn lab_options(exp: &Experiment) -> LabOptions {
    match &exp.lab_prefix {
        Some(p) => LabOptions::new(p),
        None => LabOptions::from_env(),
    }
}

/// `sh -c CMD` in its own session (so the whole group can be stopped), output to `log`.
fn spawn_shell(cmd: &str, log: &Path, run_dir: &Path) -> crate::Result<(Child, PartInfo)> {
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| Error::runtime(format!("cannot open {}: {e}", log.display())))?;
    let err = out.try_clone()?;
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(cmd)
        .env("OVERLOAD_RUN_DIR", run_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err));
    // SAFETY: setsid() is async-signal-safe and the only thing run between fork and exec.
    unsafe {
        c.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = c
        .spawn()
        .map_err(|e| Error::runtime(format!("cannot run `{cmd}`: {e}")))?;
    let pid = child.id() as i32;
    let start_ticks = process::proc_stat(pid).map_or(0, |s| s.start_ticks);
    Ok((
        child,
        PartInfo {
            name: "setup".into(),
            pid,
            pgid: pid,
            start_ticks,
            command: vec!["sh".into(), "-c".into(), cmd.into()],
            logs: vec![log.to_path_buf()],
        },
    ))
}

/// One GET: `Some(status)` when an HTTP answer came back (the body is not needed).
fn probe(url: &str, timeout: Duration) -> Option<u16> {
    let u = crate::url::Url::parse(url).ok()?;
    crate::http_get::get(&u, &u.target, &[], timeout, 64 << 10)
        .ok()
        .map(|r| r.status)
}

/// The port of a loopback URL (the only kind whose listener this host can watch).
fn local_port(url: &str) -> Option<u16> {
    let u = crate::url::Url::parse(url).ok()?;
    u.is_loopback().then_some(u.port)
}

fn start(
    exp: &Experiment,
    c: &Config,
    run: &Run,
    dir: &Path,
    state: &mut State,
) -> crate::Result<Started> {
    match &c.server {
        Server::Lab { spec, db } => {
            let opts = lab_options(exp);
            if let Some(k) = db {
                let dbspec = StackSpec {
                    knobs: k.clone(),
                    port: spec.db_port,
                    ..StackSpec::new(Stack::Mariadb)
                };
                lab::up(&dbspec, &opts)?;
            }
            // `up` restarts a stack that already runs: every run starts from a fresh server.
            let info = match lab::up(spec, &opts) {
                Ok(i) => i,
                Err(e) => {
                    if db.is_some() {
                        let _ = lab::down(Stack::Mariadb, &opts);
                    }
                    return Err(e);
                }
            };
            println!(
                "  server: lab {} up in {:.2}s at {}",
                spec.stack, info.startup_secs, info.url
            );
            Ok(Started::Lab {
                stack: spec.stack,
                db: db.is_some(),
                opts,
                url: info.url,
            })
        }
        Server::Command {
            setup,
            ready,
            url,
            ready_timeout,
            ..
        } => {
            let logs = dir.join("logs");
            std::fs::create_dir_all(&logs)?;
            let log = logs.join(format!("{}.setup.log", run.id));
            let (mut child, part) = spawn_shell(setup, &log, &dir.join(&run.id))?;
            state.server = Some(ServerState {
                run: run.id.clone(),
                pid: part.pid,
                start_ticks: part.start_ticks,
            });
            state.save(dir)?;
            let t0 = Instant::now();
            let deadline = t0 + *ready_timeout;
            let mut exited_ok = false;
            loop {
                if !exited_ok {
                    if let Some(st) = child.try_wait()? {
                        if !st.success() {
                            let _ = process::stop(&part, STOP_GRACE);
                            return Err(Error::runtime(format!(
                                "{}: setup `{setup}` failed ({st}) before {ready} answered\n{}",
                                run.id,
                                process::log_excerpt(&part.logs, 5)
                            )));
                        }
                        // A script that started a daemon and returned: keep polling.
                        exited_ok = true;
                    }
                }
                if probe(ready, Duration::from_millis(500)).is_some_and(|s| s < 500) {
                    break;
                }
                if Instant::now() >= deadline || crate::signals::interrupted() {
                    let _ = process::stop(&part, STOP_GRACE);
                    return Err(Error::runtime(format!(
                        "{}: {ready} did not answer within {} of `{setup}`\n{}",
                        run.id,
                        crate::units::fmt_duration(*ready_timeout),
                        process::log_excerpt(&part.logs, 5)
                    )));
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            println!(
                "  server: `{setup}` ready in {:.2}s at {url}",
                t0.elapsed().as_secs_f64()
            );
            Ok(Started::Command {
                part,
                child,
                url: url.clone(),
            })
        }
    }
}

/// Runs `cmd` with a deadline; kills its group when it overruns.
fn run_bounded(cmd: &str, log: &Path, run_dir: &Path, limit: Duration) -> crate::Result<()> {
    let (mut child, part) = spawn_shell(cmd, log, run_dir)?;
    let deadline = Instant::now() + limit;
    loop {
        if let Some(st) = child.try_wait()? {
            return if st.success() {
                Ok(())
            } else {
                Err(Error::runtime(format!("teardown `{cmd}` failed ({st})")))
            };
        }
        if Instant::now() >= deadline {
            let _ = process::stop(&part, Duration::ZERO);
            return Err(Error::runtime(format!(
                "teardown `{cmd}` did not finish within {}",
                crate::units::fmt_duration(limit)
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn stop(c: &Config, s: Started, run: &Run, dir: &Path) -> crate::Result<()> {
    match s {
        Started::Lab {
            stack, db, opts, ..
        } => {
            lab::down(stack, &opts)?;
            if db {
                lab::down(Stack::Mariadb, &opts)?;
            }
            Ok(())
        }
        Started::Command {
            part,
            mut child,
            url,
        } => {
            let mut first = None;
            if let Server::Command {
                teardown: Some(t), ..
            } = &c.server
            {
                let log = dir.join("logs").join(format!("{}.teardown.log", run.id));
                if let Err(e) = run_bounded(t, &log, &dir.join(&run.id), TEARDOWN_TIMEOUT) {
                    first = Some(e);
                }
            }
            // Whatever the setup command left running in its session goes too.
            if let Err(e) = process::stop(&part, STOP_GRACE) {
                first.get_or_insert(e);
            }
            let _ = child.try_wait();
            // The next configuration may listen on the same port.
            if let Some(port) = local_port(&url) {
                if let Err(e) = process::wait_port_free(port, Duration::from_secs(10)) {
                    first.get_or_insert(e);
                }
            }
            match first {
                Some(e) => Err(e),
                None => Ok(()),
            }
        }
    }
}

/// A server a killed experiment left behind (recorded in the state), stopped.
fn stop_leftover(state: &mut State, dir: &Path) -> crate::Result<()> {
    if let Some(s) = state.server.take() {
        let alive = process::proc_stat(s.pid).is_some_and(|p| p.start_ticks == s.start_ticks);
        let part = PartInfo {
            name: "setup".into(),
            pid: s.pid,
            pgid: s.pid,
            start_ticks: s.start_ticks,
            command: Vec::new(),
            logs: Vec::new(),
        };
        if alive || !process::group_members(&part).is_empty() {
            println!(
                "stopping the server of {} left by the interrupted experiment (pid {})",
                s.run, s.pid
            );
            process::stop(&part, STOP_GRACE)?;
        }
        state.save(dir)?;
    }
    Ok(())
}

/// The warm-up round: the first level for `c.warmup`, counted nowhere (S2).
fn warm_up(c: &Config, base: &str) -> crate::Result<()> {
    if c.warmup.is_zero() {
        return Ok(());
    }
    let args = plan::warmup_args(c, base);
    let Ok(Cmd {
        c: crate::cli::Command::Run(a),
    }) = Cmd::try_parse_from(&args)
    else {
        return Err(Error::runtime(format!(
            "internal: warm-up command does not parse: {}",
            plan::shell(&args)
        )));
    };
    let (cfg, urls) = a.engine_config()?;
    let (s, _) = crate::cli::run::execute(&cfg, &urls, true)?;
    println!(
        "  warm-up: {} for {}: {:.1} responses/s, {} errors (not stored)",
        urls.first().map_or("", String::as_str),
        crate::units::fmt_duration(c.warmup),
        s.throughput,
        s.error_count
    );
    Ok(())
}

/// The load plan through the real `sweep` / `capacity` command; its exit code.
fn measure(args: &[String]) -> crate::Result<i32> {
    match Cmd::try_parse_from(args) {
        Ok(Cmd {
            c: crate::cli::Command::Sweep(a),
        }) => crate::cli::sweep::run(a),
        Ok(Cmd {
            c: crate::cli::Command::Capacity(a),
        }) => crate::cli::capacity::run(a),
        Ok(_) => Err(Error::runtime("internal: not a sweep or capacity command")),
        Err(e) => Err(Error::runtime(format!(
            "internal: generated command does not parse ({}): {}",
            e.kind(),
            plan::shell(args)
        ))),
    }
}

/// A partly written folder of an interrupted run goes to EXPDIR/.interrupted/, so the run
/// starts over in a clean folder and nothing measured is deleted.
fn set_aside(dir: &Path, id: &str) -> crate::Result<()> {
    let p = dir.join(id);
    if p.exists() {
        let aside = dir.join(".interrupted");
        std::fs::create_dir_all(&aside)?;
        let to = aside.join(format!("{id}-{}", crate::clock::unix_ms()));
        std::fs::rename(&p, &to)?;
        println!("  {id}: an unfinished folder was moved to {}", to.display());
    }
    Ok(())
}

pub struct Options {
    pub quiet: bool,
}

/// Runs every run not yet finished; returns the exit code (130 when interrupted).
pub fn execute(
    exp: &Experiment,
    dir: &Path,
    state: &mut State,
    opts: &Options,
) -> crate::Result<i32> {
    crate::signals::install();
    stop_leftover(state, dir)?;
    let runs = plan::runs(exp);
    let total = runs.len();
    let t0 = Instant::now();
    for (k, run) in runs.iter().enumerate() {
        if state.is_done(&run.id) {
            println!("run {}/{total} {}: finished before, skipped", k + 1, run.id);
            continue;
        }
        if crate::signals::interrupted() {
            return Ok(130);
        }
        let c = &exp.configs[run.config];
        println!(
            "\n=== run {}/{total}: {} ({}, repetition {}) · {:.0}s into the experiment",
            k + 1,
            run.id,
            super::report::server_text(c),
            run.rep,
            t0.elapsed().as_secs_f64()
        );
        set_aside(dir, &run.id)?;
        let started_ms = crate::clock::unix_ms();
        let server = start(exp, c, run, dir, state)?;
        let base = server.url().to_string();
        let out: PathBuf = dir.join(&run.id);
        let args = plan::run_args(c, &base, &out.to_string_lossy(), &run.id, opts.quiet);
        let result = warm_up(c, &base).and_then(|()| {
            if crate::signals::interrupted() {
                Ok(130)
            } else {
                measure(&args)
            }
        });
        let stopped = stop(c, server, run, dir);
        state.server = None;
        state.save(dir)?;
        let code = result?;
        stopped?;
        if code == 130 || crate::signals::interrupted() {
            println!("\n{}: interrupted; `--resume` runs it again", run.id);
            return Ok(130);
        }
        state.mark_done(RunState {
            id: run.id.clone(),
            config: c.name.clone(),
            rep: run.rep,
            exit_code: code,
            started_unix_ms: started_ms,
            finished_unix_ms: crate::clock::unix_ms(),
            command: plan::shell(&args),
        });
        state.save(dir)?;
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_ports() {
        assert_eq!(local_port("http://127.0.0.1:8080/x"), Some(8080));
        assert_eq!(local_port("http://localhost/"), Some(80));
        assert_eq!(local_port("http://10.0.0.1:80/"), None);
        assert_eq!(
            probe("http://127.0.0.1:1/", Duration::from_millis(100)),
            None
        );
    }
}
