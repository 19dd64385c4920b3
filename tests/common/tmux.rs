//! tmux as the terminal of a test: a server of the test alone (its own socket) whose one
//! pane runs `overload`, with what a user at that terminal does (keys, reading the screen,
//! killing the session). Tests using it need `Need::Tmux`.
use super::{output_within, QUICK};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// A tmux server of this test alone (its own socket), with one window (120×40 unless told)
/// running a script; killed on drop.
pub struct Tmux {
    socket: String,
}

impl Tmux {
    /// Runs `overload ARGS` in `dir`, then prints its exit code and the terminal's mode, and
    /// waits there so the pane stays readable.
    pub fn start(dir: &Path, name: &str, args: &[&str]) -> Tmux {
        Tmux::start_under(dir, name, &[], args)
    }

    /// As [`Tmux::start`], with `overload` run by `wrapper` (e.g. `timeout 20`).
    pub fn start_under(dir: &Path, name: &str, wrapper: &[&str], args: &[&str]) -> Tmux {
        Tmux::start_sized(dir, name, (120, 40), wrapper, args)
    }

    /// As [`Tmux::start_under`], in a window of `size` (columns, rows).
    pub fn start_sized(
        dir: &Path,
        name: &str,
        size: (u16, u16),
        wrapper: &[&str],
        args: &[&str],
    ) -> Tmux {
        let socket = format!("overload-test-{}-{name}", std::process::id());
        let quote = |a: &&str| format!("'{a}'");
        let quoted: Vec<String> = args.iter().map(quote).collect();
        let wrapper: Vec<String> = wrapper.iter().map(quote).collect();
        let script = dir.join("run.sh");
        std::fs::write(
            &script,
            format!(
                "cd '{}'\n{} '{}' {}\necho \"overload-exited-$?\"\n\
                 echo \"tty:$(stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e -icanon -e echo -e -echo | tr '\\n' ' ')\"\n\
                 sleep 120\n",
                dir.display(),
                wrapper.join(" "),
                env!("CARGO_BIN_EXE_overload"),
                quoted.join(" ")
            ),
        )
        .unwrap();
        let t = Tmux { socket };
        let (x, y) = (size.0.to_string(), size.1.to_string());
        let ok = t
            .cmd(&["new-session", "-d", "-s", "t", "-x", &x, "-y", &y])
            .arg(format!("sh '{}'", script.display()))
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "tmux new-session failed");
        t
    }

    /// The process the pane's script started (`overload`), by its parent: the pane's shell.
    pub fn child_pid(&self) -> i32 {
        let o = output_within(
            &mut self.cmd(&["list-panes", "-t", "t", "-F", "#{pane_pid}"]),
            QUICK,
        );
        let shell: u32 = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap();
        let children: Vec<i32> = super::procs::children_of(shell)
            .into_iter()
            .map(|(pid, _)| pid as i32)
            .collect();
        assert_eq!(
            children.len(),
            1,
            "the pane's shell runs one child: {children:?}"
        );
        children[0]
    }

    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket]).args(args);
        c
    }

    /// The pane as shown now (the alternate screen while the view is up).
    pub fn capture(&self) -> String {
        let o = output_within(&mut self.cmd(&["capture-pane", "-p", "-t", "t"]), QUICK);
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    pub fn alternate_screen(&self) -> bool {
        let o = output_within(
            &mut self.cmd(&["display-message", "-p", "-t", "t", "#{alternate_on}"]),
            QUICK,
        );
        String::from_utf8_lossy(&o.stdout).trim() == "1"
    }

    pub fn keys(&self, k: &str) {
        let ok = self
            .cmd(&["send-keys", "-t", "t", k])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "tmux send-keys {k}");
    }

    /// Waits until the pane shows `text`; returns the capture.
    pub fn wait_for(&self, text: &str, limit: Duration) -> String {
        let mut last = String::new();
        let end = std::time::Instant::now() + limit;
        while std::time::Instant::now() < end {
            last = self.capture();
            if last.contains(text) {
                return last;
            }
            // The helper's polling period.
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("the pane never showed {text:?} within {limit:?}; it shows:\n{last}");
    }
}

impl Tmux {
    /// What `tmux kill-session` does to a pane: its terminal goes away (the pty is closed,
    /// its processes get SIGHUP), as when an ssh connection drops.
    pub fn kill_session(&self) {
        let ok = self
            .cmd(&["kill-session", "-t", "t"])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "tmux kill-session");
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]).output();
    }
}
