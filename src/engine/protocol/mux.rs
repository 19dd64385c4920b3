//! What the multiplexed wires (HTTP/2, HTTP/3) share about scenario users: each user holds
//! its own connection per server, as a browser does, and its page's burst goes as streams on
//! it. Two users never share one (a server's per-connection state must not leak between
//! sessions); the plain path's slots share the thread's connections as before.
use crate::engine::conn::NO_USER;

/// Where a slot's request goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Route {
    /// A request of the mix: any of the thread's shared connections (the wire's own choice).
    Shared,
    /// The user's connection to the server, at this index (queued there if its streams are
    /// all busy).
    Own(usize),
    /// A new connection, the user's own from now on: it has none to that server that can
    /// take a request (none yet, or it closed, or it is going away).
    OpenOwn,
}

/// Scenario users' own connections, by the worker's user index: (server, connection index,
/// generation) for each server the user talked to.
#[derive(Debug, Default)]
pub(super) struct Owned {
    by_user: Vec<Vec<(usize, usize, u32)>>,
}

impl Owned {
    /// User `user`'s connection to server `addr`, as it was recorded (it may have closed since).
    pub fn of(&self, user: usize, addr: usize) -> Option<(usize, u32)> {
        self.by_user
            .get(user)?
            .iter()
            .find(|e| e.0 == addr)
            .map(|e| (e.1, e.2))
    }

    /// Records connection (`ci`, `gen`) as user `user`'s to server `addr` (replacing one
    /// that went away).
    pub fn set(&mut self, user: usize, addr: usize, ci: usize, gen: u32) {
        if self.by_user.len() <= user {
            self.by_user.resize_with(user + 1, Vec::new);
        }
        let list = &mut self.by_user[user];
        match list.iter_mut().find(|e| e.0 == addr) {
            Some(e) => *e = (addr, ci, gen),
            None => list.push((addr, ci, gen)),
        }
    }

    /// The user's session ended: its connections as (index, generation), forgotten here
    /// (the list keeps its room for the next user in that place).
    pub fn release(&mut self, user: usize, mut each: impl FnMut(usize, u32)) {
        if let Some(list) = self.by_user.get_mut(user) {
            for (_, ci, gen) in list.drain(..) {
                each(ci, gen);
            }
        }
    }
}

/// The route of a request of slot user `user` (NO_USER: none) to server `addr`: `takes`
/// says whether the connection (index, generation) is still there and can take one more
/// request.
pub(super) fn route(
    user: u32,
    owned: &Owned,
    addr: usize,
    takes: impl Fn(usize, u32) -> bool,
) -> Route {
    if user == NO_USER {
        return Route::Shared;
    }
    match owned.of(user as usize, addr) {
        Some((ci, gen)) if takes(ci, gen) => Route::Own(ci),
        _ => Route::OpenOwn,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_s_streams_go_on_its_own_connection_to_each_server() {
        let mut owned = Owned::default();
        let live = |_: usize, _: u32| true;
        // The plain path shares the thread's connections.
        assert_eq!(route(NO_USER, &owned, 0, live), Route::Shared);
        // A user's first request to a server opens its own connection.
        assert_eq!(route(3, &owned, 0, live), Route::OpenOwn);
        owned.set(3, 0, 7, 1);
        assert_eq!(route(3, &owned, 0, live), Route::Own(7));
        // Another server: another connection of its own; another user: never user 3's.
        assert_eq!(route(3, &owned, 1, live), Route::OpenOwn);
        assert_eq!(route(4, &owned, 0, live), Route::OpenOwn);
        owned.set(4, 0, 8, 1);
        owned.set(3, 1, 9, 1);
        assert_eq!(route(4, &owned, 0, live), Route::Own(8));
        assert_eq!(route(3, &owned, 1, live), Route::Own(9));
        // Its connection closed or is going away (GOAWAY, its last call): a new one,
        // which replaces it.
        let only_gen_2 = |_: usize, gen: u32| gen == 2;
        assert_eq!(route(3, &owned, 0, only_gen_2), Route::OpenOwn);
        owned.set(3, 0, 7, 2);
        assert_eq!(route(3, &owned, 0, only_gen_2), Route::Own(7));
        assert_eq!(owned.of(3, 0), Some((7, 2)));
        // The session ends: its connections are handed back to close, the next user in
        // its place starts with none.
        let mut closed = Vec::new();
        owned.release(3, |ci, gen| closed.push((ci, gen)));
        closed.sort_unstable();
        assert_eq!(closed, vec![(7, 2), (9, 1)]);
        assert_eq!(route(3, &owned, 0, live), Route::OpenOwn);
        assert_eq!(
            route(4, &owned, 0, live),
            Route::Own(8),
            "others keep theirs"
        );
        owned.release(40, |_, _| panic!("a user never seen has none"));
    }
}
