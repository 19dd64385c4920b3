//! Hostile cases: a local unprivileged user (www-data too): audit, lab, files another user may write.
use crate::common::harness::{trial, trial_or_ignored, Need};
use crate::common::{bin, free_port, output_within, scratch, wait_until};
use libtest_mimic::Trial;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const GUARD: Duration = Duration::from_secs(60);
const NOBODY: u32 = 65534;

pub fn trials() -> Vec<Trial> {
    vec![
        // One trial for both: the search takes the oldest master, so two tests starting
        // masters at once would each see the other's.
        trial_or_ignored(
            "local_audit_never_runs_a_program_a_user_planted",
            &[Need::Root],
            || fake_fpm_master().or_else(path_entry_others_can_write),
        ),
        trial(
            "local_lab_up_never_writes_through_a_planted_link",
            &[Need::Root],
            lab_up_never_writes_through_a_planted_link,
        ),
        trial(
            "local_lab_up_refuses_a_prefix_another_user_can_write",
            &[Need::Root],
            lab_up_refuses_a_prefix_another_user_can_write,
        ),
        trial(
            "local_lab_up_gives_the_workers_nothing_the_master_chowns",
            &[Need::Root],
            lab_up_gives_the_workers_nothing_the_master_chowns,
        ),
        trial(
            "local_token_resume_and_lab_state_files_are_capped_and_never_waited_on",
            &[],
            token_resume_and_lab_state_files_are_capped,
        ),
        trial(
            "local_outputs_onto_a_link_are_refused_before_the_load",
            &[],
            outputs_onto_a_link_are_refused_before_the_load,
        ),
    ]
}

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn chown_nobody(p: &Path) {
    std::os::unix::fs::chown(p, Some(NOBODY), Some(NOBODY)).unwrap();
}

/// A program that leaves `marker` when run with `-i`, `--ini` or `-v` (how PHP's binaries are
/// asked for their files), and otherwise waits: what a local user would start as a fake FPM
/// master, or plant as `php-fpm` on a PATH entry. Err: no C compiler here.
fn planted_program(dir: &Path, marker: &Path) -> Result<PathBuf, String> {
    let src = dir.join("fpm.c");
    std::fs::write(
        &src,
        format!(
            "#include <fcntl.h>\n#include <string.h>\n#include <unistd.h>\n\
             int main(int c, char **v) {{\n\
               for (int i = 1; i < c; i++)\n\
                 if (!strcmp(v[i], \"-i\") || !strcmp(v[i], \"--ini\") || !strcmp(v[i], \"-v\")) {{\n\
                   close(open(\"{}\", O_CREAT | O_WRONLY, 0666));\n\
                   return 0;\n\
                 }}\n\
               for (;;) pause();\n\
             }}\n",
            marker.display()
        ),
    )
    .unwrap();
    let exe = dir.join("fpm");
    match Command::new("cc").arg("-o").arg(&exe).arg(&src).output() {
        Ok(o) if o.status.success() => Ok(exe),
        Ok(o) => Err(format!(
            "cc failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Err(format!(
            "no C compiler (cc) to build the planted program: {e}"
        )),
    }
}

/// `exe` started with the title of an FPM master whose configuration is `conf`, as `uid`
/// (through setpriv when not root). Killed when dropped.
struct Master(Child);

impl Master {
    fn start(exe: &Path, conf: &Path, uid: u32) -> Master {
        let title = format!("php-fpm: master process ({})", conf.display());
        let mut cmd = Command::new("setpriv");
        if uid != 0 {
            cmd.args([
                format!("--reuid={uid}"),
                format!("--regid={uid}"),
                "--clear-groups".into(),
            ]);
        }
        let child = cmd
            .args(["bash", "-c", "exec -a \"$0\" \"$1\""])
            .arg(&title)
            .arg(exe)
            .stdin(Stdio::null())
            .spawn()
            .expect("setpriv");
        let pid = child.id();
        wait_until("the fake master's title", Duration::from_secs(10), || {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.starts_with(title.as_bytes()))
        });
        Master(child)
    }
}

impl Drop for Master {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A folder under a fresh scratch folder that nobody owns and everyone can write.
fn users_dir(root: &Path) -> PathBuf {
    chmod(root, 0o755);
    let d = root.join("user");
    std::fs::create_dir(&d).unwrap();
    chown_nobody(&d);
    chmod(&d, 0o777);
    d
}

/// What a local user plants: their program, an FPM configuration and a php.ini beside it.
fn plant(d: &Path, marker: &Path) -> Result<PathBuf, String> {
    let exe = planted_program(d, marker)?;
    std::fs::write(d.join("php-fpm.conf"), "[www]\npm.max_children = 1\n").unwrap();
    std::fs::write(d.join("php.ini"), "memory_limit = 1M\n").unwrap();
    for f in ["fpm", "php-fpm.conf", "php.ini"] {
        chown_nobody(&d.join(f));
    }
    Ok(exe)
}

/// The agent's `/php-ini` answer, asked as the audit asks it without a port (so every
/// master counts), the agent's PATH `env_path` when given.
fn agent_php_ini(env_path: Option<&str>) -> String {
    let dir = scratch();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "local-hostile-token-0123456789\n").unwrap();
    chmod(&token_file, 0o600);
    let mut cmd = bin();
    if let Some(p) = env_path {
        cmd.env("PATH", p);
    }
    let mut child = cmd
        .args(["agent", "--listen", "127.0.0.1:0", "--token-file"])
        .arg(&token_file)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn agent");
    let addr = crate::common::agent_addr(&mut child);
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
    s.set_read_timeout(Some(GUARD)).unwrap();
    s.write_all(
        b"GET /php-ini HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer local-hostile-token-0123456789\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    let _ = child.kill();
    let _ = child.wait();
    answer
}

/// `overload audit` on a loopback port nothing listens on (so the PHP search looks at every
/// master), its PATH `env_path` when given; its stdout and stderr.
fn audit_here(env_path: Option<&str>) -> String {
    let mut cmd = bin();
    if let Some(p) = env_path {
        cmd.env("PATH", p);
    }
    let url = format!("http://127.0.0.1:{}/", free_port());
    let out = output_within(
        cmd.args([
            "audit",
            &url,
            "--no-ab",
            "--idle-wait",
            "10ms",
            "--json",
            "-",
        ]),
        GUARD,
    );
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Defect 1: a local user starts a process titled `php-fpm: master process (their conf)`
/// whose executable is their own program. Neither `audit` (run as root) nor the agent's
/// `/php-ini` runs it, and neither reads the user's files as the server's.
fn fake_fpm_master() -> Option<String> {
    let root = scratch();
    let d = users_dir(root.path());
    let marker = d.join("ran-as-root");
    let exe = match plant(&d, &marker) {
        Ok(e) => e,
        Err(why) => return Some(why),
    };
    let _m = Master::start(&exe, &d.join("php-fpm.conf"), NOBODY);
    let out = audit_here(None);
    assert!(!marker.exists(), "audit ran the user's program: {out}");
    // Where the lab tests run beside this one (CI), a root's php-fpm master of theirs is the
    // one the audit reads; else the planted one is named as ignored.
    if !out.contains("the php-fpm master (pid") {
        assert!(out.contains("ignored a php-fpm master title"), "{out}");
    }
    assert!(!out.contains("memory_limit = 1M"), "{out}");
    let answer = agent_php_ini(None);
    assert!(
        !marker.exists(),
        "the agent ran the user's program: {answer}"
    );
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        answer.contains("ignored a php-fpm master title"),
        "{answer}"
    );
    None
}

/// Defect 1, the PATH: root's own master (so the search goes on to a `php-fpm` on the PATH),
/// and a PATH whose first entry another user can write, holding their `php-fpm`: never run.
fn path_entry_others_can_write() -> Option<String> {
    let root = scratch();
    let d = users_dir(root.path());
    let marker = d.join("ran-as-root");
    let exe = match plant(&d, &marker) {
        Ok(e) => e,
        Err(why) => return Some(why),
    };
    let bin_dir = d.join("bin");
    std::fs::create_dir(&bin_dir).unwrap();
    std::fs::copy(&exe, bin_dir.join("php-fpm")).unwrap();
    chown_nobody(&bin_dir);
    chown_nobody(&bin_dir.join("php-fpm"));
    chmod(&bin_dir, 0o777);
    // Root's own master: a root-owned copy of the program, its configuration root's.
    let conf_dir = root.path().join("etc");
    std::fs::create_dir(&conf_dir).unwrap();
    std::fs::write(
        conf_dir.join("php-fpm.conf"),
        "[www]\npm.max_children = 3\n",
    )
    .unwrap();
    let roots = root.path().join("root-fpm");
    std::fs::copy(&exe, &roots).unwrap();
    let _m = Master::start(&roots, &conf_dir.join("php-fpm.conf"), 0);
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = audit_here(Some(&path));
    assert!(
        !marker.exists(),
        "audit ran a php-fpm from a PATH entry others can write: {out}"
    );
    let answer = agent_php_ini(Some(&path));
    assert!(
        !marker.exists(),
        "the agent ran a php-fpm from a PATH entry others can write: {answer}"
    );
    None
}

/// `overload lab up nginx-fpm` in `prefix` on a free port, without MariaDB. Where the lab
/// packages are missing it renders everything and then fails to start php-fpm: what these
/// tests look at is written by then. (exit code, stderr)
fn lab_up(prefix: &Path) -> (Option<i32>, String) {
    let port = free_port().to_string();
    let out = output_within(
        bin()
            .args([
                "lab",
                "up",
                "nginx-fpm",
                "--no-db",
                "--port",
                &port,
                "--prefix",
            ])
            .arg(prefix),
        GUARD,
    );
    let _ = output_within(
        bin()
            .args(["lab", "down", "nginx-fpm", "--prefix"])
            .arg(prefix),
        GUARD,
    );
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A file outside the prefix that a link planted in it points at.
fn victim(dir: &Path, name: &str) -> PathBuf {
    let v = dir.join(name);
    std::fs::write(&v, "precious\n").unwrap();
    v
}

/// Defect 2: links planted at files `lab up` renders (conf/php-fpm.conf, www/index.html),
/// as left in a prefix another user could once write: `lab up` refuses or replaces them,
/// and never writes their targets.
fn lab_up_never_writes_through_a_planted_link() {
    let root = scratch();
    let prefix = root.path().join("lab");
    let _ = lab_up(&prefix);
    let stack = prefix.join("nginx-fpm");
    assert!(
        stack.join("conf/php-fpm.conf").is_file(),
        "the first up rendered nothing"
    );
    let outside = root.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let conf = victim(&outside, "conf-victim");
    let page = victim(&outside, "page-victim");
    for (link, to) in [("conf/php-fpm.conf", &conf), ("www/index.html", &page)] {
        std::fs::remove_file(stack.join(link)).unwrap();
        std::os::unix::fs::symlink(to, stack.join(link)).unwrap();
    }
    let (code, err) = lab_up(&prefix);
    assert_eq!(
        std::fs::read_to_string(&conf).unwrap(),
        "precious\n",
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&page).unwrap(),
        "precious\n",
        "{err}"
    );
    assert_ne!(code, Some(0), "{err}");
}

/// Defect 2: a prefix, or a stack directory in it, that another user owns or can write is
/// refused (exit 2, one line), before anything is written in it.
fn lab_up_refuses_a_prefix_another_user_can_write() {
    let root = scratch();
    chmod(root.path(), 0o755);
    let open = root.path().join("open");
    std::fs::create_dir(&open).unwrap();
    chmod(&open, 0o777);
    let (code, err) = lab_up(&open);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("other users can write"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(!open.join("nginx-fpm").exists());
    // A prefix inside another user's folder: they could rename it and put theirs instead.
    let theirs = root.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    chown_nobody(&theirs);
    let (code, err) = lab_up(&theirs.join("lab"));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("belongs to uid 65534, who could replace the prefix"),
        "{err}"
    );
    assert!(!theirs.join("lab").exists());
    // The prefix root's, the stack's directory in it someone else's.
    let prefix = root.path().join("lab");
    std::fs::create_dir(&prefix).unwrap();
    std::fs::write(prefix.join(".lock"), "").unwrap();
    std::fs::create_dir(prefix.join("nginx-fpm")).unwrap();
    chown_nobody(&prefix.join("nginx-fpm"));
    let (code, err) = lab_up(&prefix);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("belongs to uid 65534"), "{err}");
    assert!(!prefix.join("nginx-fpm/conf").exists());
    // A link in place of a directory `lab up` makes.
    std::fs::remove_dir(prefix.join("nginx-fpm")).unwrap();
    std::fs::create_dir(prefix.join("nginx-fpm")).unwrap();
    let elsewhere = root.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, prefix.join("nginx-fpm/conf")).unwrap();
    let (code, err) = lab_up(&prefix);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("symbolic link"), "{err}");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0, "{err}");
    // A dangling `.lock` link: root never creates its target.
    std::fs::remove_file(prefix.join(".lock")).unwrap();
    let target = root.path().join("made-by-root");
    std::os::unix::fs::symlink(&target, prefix.join(".lock")).unwrap();
    let (code, err) = lab_up(&prefix);
    assert_ne!(code, Some(0), "{err}");
    assert!(err.contains("symbolic link"), "{err}");
    assert!(std::fs::symlink_metadata(&target).is_err(), "{err}");
    // The root directory, or a directory holding other files and no lab, as the prefix:
    // `lab up` would make it private (mode 0710).
    let (code, err) = lab_up(Path::new("/"));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("root directory"), "{err}");
    let (code, err) = lab_up(&elsewhere.join(".."));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("holds other files and no lab"), "{err}");
}

/// Defect 2: the workers (www-data) own only leaf directories that no root process writes
/// or chowns through. nginx's temp paths live in tmp/, which root owns and `lab up` makes
/// afresh: a `tmp/client_body` link a worker planted is gone, so nginx's chown of its temp
/// paths never reaches the link's target. The master's logs are root's too.
fn lab_up_gives_the_workers_nothing_the_master_chowns() {
    use std::os::unix::fs::MetadataExt;
    let root = scratch();
    let prefix = root.path().join("lab");
    let _ = lab_up(&prefix);
    let tmp = prefix.join("nginx-fpm/tmp");
    let target = root.path().join("chown-me");
    std::fs::create_dir(&target).unwrap();
    // As www-data could where tmp/ is theirs: a link where nginx keeps request bodies.
    if std::fs::symlink_metadata(&tmp).unwrap().uid() != 0 {
        std::os::unix::fs::symlink(&target, tmp.join("client_body")).unwrap();
    }
    let _ = lab_up(&prefix);
    for d in ["tmp", "logs", "conf", "run", "www"] {
        let m = std::fs::symlink_metadata(prefix.join("nginx-fpm").join(d)).unwrap();
        assert!(m.is_dir(), "{d}");
        assert_eq!(m.uid(), 0, "{d} is not root's");
        assert_eq!(m.mode() & 0o022, 0, "{d} can be written by others");
    }
    // Where the lab's packages are installed nginx is started and makes tmp/client_body
    // itself, a directory in root's tmp/ that no worker can replace; never a link, and the
    // link's target was never chowned to the workers.
    let body = std::fs::symlink_metadata(tmp.join("client_body"));
    assert!(
        body.as_ref().map_or(true, |m| m.is_dir()),
        "tmp/client_body: {body:?}"
    );
    assert_eq!(
        std::fs::metadata(&target).unwrap().uid(),
        0,
        "nginx chowned through the link"
    );
    // PHP's workers write their error log, created for them, owned by www-data.
    let php_log = prefix.join("nginx-fpm/logs/php-errors.log");
    let m = std::fs::symlink_metadata(&php_log).unwrap();
    assert!(m.is_file() && m.uid() != 0, "{m:?}");
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
    // SAFETY: plain syscall on a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// `overload ARGS` ends within the guard with `code` and one line on stderr that contains
/// `says`. A FIFO with no writer would hang a plain read forever: the guard catches that.
fn refused(args: &[&str], code: i32, says: &str) {
    let out = output_within(bin().args(args), Duration::from_secs(30));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    assert!(err.contains(says), "{args:?}: {err}");
}

/// Defect 19: the token files, an experiment's `--resume` state and the lab's state.json
/// are read through the capped reader: `/dev/zero` and a FIFO are refused at once (neither
/// read without end nor waited on), a file over the cap is refused naming it.
fn token_resume_and_lab_state_files_are_capped() {
    let d = scratch();
    let fifo = d.path().join("fifo");
    mkfifo(&fifo);
    let fifo_s = fifo.to_str().unwrap();
    let big = d.path().join("big");
    std::fs::write(&big, vec![b'a'; 5000]).unwrap();
    let big_s = big.to_str().unwrap();
    for f in ["/dev/zero", fifo_s] {
        refused(
            &["agent", "--listen", "127.0.0.1:0", "--token-file", f],
            2,
            "not a regular file",
        );
        refused(
            &[
                "audit",
                "http://127.0.0.1:1/",
                "--agent",
                "http://127.0.0.1:1",
                "--agent-token-file",
                f,
            ],
            2,
            "--agent-token-file",
        );
    }
    refused(
        &["agent", "--listen", "127.0.0.1:0", "--token-file", big_s],
        2,
        "4 KiB limit",
    );
    // An experiment whose state is a FIFO (or a device) in its folder.
    let toml = d.path().join("e.toml");
    std::fs::write(
        &toml,
        "repetitions = 1\n[load]\nusers = 1\n[[config]]\nname = 'a'\nsetup = 'true'\nready = 'http://127.0.0.1:1/'\n",
    )
    .unwrap();
    let exp = d.path().join("exp");
    std::fs::create_dir(&exp).unwrap();
    mkfifo(&exp.join("experiment.json"));
    refused(
        &[
            "experiment",
            toml.to_str().unwrap(),
            "--resume",
            "--out",
            exp.to_str().unwrap(),
        ],
        2,
        "a FIFO, not a regular file",
    );
    // The experiment file itself.
    for f in ["/dev/zero", fifo_s] {
        refused(&["experiment", f, "--dry-run"], 2, "not a regular file");
    }
    // The lab's state.json, read by `lab status` (no root needed to read).
    let prefix = d.path().join("lab");
    std::fs::create_dir_all(prefix.join("nginx-fpm")).unwrap();
    mkfifo(&prefix.join("nginx-fpm/state.json"));
    let out = output_within(
        bin().args(["lab", "status", "--prefix"]).arg(&prefix),
        Duration::from_secs(30),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("not a regular file"), "{err}");
}

/// Low: `--json` or `--hdr-log` onto a link another user planted (or a FIFO) is refused
/// before the load starts (exit 2), not after it with the results lost; `--name ../../x`
/// cannot put a results folder outside runs/.
fn outputs_onto_a_link_are_refused_before_the_load() {
    let d = scratch();
    let victim = d.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let link = d.path().join("out.json");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let fifo = d.path().join("fifo");
    mkfifo(&fifo);
    let url = format!("http://127.0.0.1:{}/", free_port());
    for (flag, p) in [("--json", &link), ("--hdr-log", &link), ("--json", &fifo)] {
        let t0 = std::time::Instant::now();
        refused(
            &[
                "run",
                &url,
                "-d",
                "3s",
                "-n",
                "100",
                flag,
                p.to_str().unwrap(),
            ],
            2,
            flag,
        );
        assert!(
            t0.elapsed() < Duration::from_secs(3),
            "{flag} refused only after the load"
        );
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    let out = output_within(
        bin().current_dir(d.path()).args([
            "sweep", &url, "--rates", "10", "--step", "1s", "--name", "../../x",
        ]),
        GUARD,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("'/' is not allowed"), "{err}");
}
