//! Models of a synctest bubble's idle decision (`bubble::findrunnable`): with nothing runnable
//! and a G that waits for something outside the bubble (not durably blocked), the bubble's one
//! M sleeps in the netpoller until a wake from outside, which pushes the G to the global queue
//! and must wake that M (`Bubble::after_global_push`): the sleeper publishes `sleeping`,
//! fences and looks at the queue; the waker pushes, fences and looks at `sleeping`. A lost
//! wake-up leaves the M asleep forever, which loom reports as a deadlock.

use super::g::{config, run_queued, settle, spawn, take_stashed, Counts, STASH_THEN_READY};
use super::model;
use crate::bubble::{Bubble, BubbleSpec, Policy};
use crate::idle::M;
use crate::m::{Found, MCtx};
use crate::sched::Shared;
use loom::thread;
use std::sync::Arc as StdArc;

/// A bubble runtime whose P is idle, as before its `block_on` takes it.
fn bubble_runtime() -> StdArc<Shared> {
    let mut c = config(1);
    c.bubble = Some(StdArc::new(Bubble::new(BubbleSpec { seed: 1, policy: Policy::Random })));
    Shared::new(c, crate::m::mstart).expect("shared")
}

/// A G of the bubble parked on a foreign future (wait reason `future`: not durable) is woken by
/// a plain thread while the bubble's M decides what to do: the M finds it, whichever came first.
#[test]
fn loom_bubble_sleeps_until_a_wake_from_outside() {
    model(|| {
        let sh = bubble_runtime();
        let counts = Counts::new();
        let h = spawn(&sh, STASH_THEN_READY, &counts);
        assert_eq!(run_queued(&sh), 1);
        let w = take_stashed(&counts);
        let waker = thread::spawn(move || w.wake());
        {
            let ctx = MCtx::new(sh.clone(), StdArc::new(M::new()), None);
            crate::m::enter(&ctx, || {
                ctx.acquirep(sh.pidleget().expect("the bubble's P"));
                let b = sh.config.bubble.clone().expect("a bubble");
                match ctx.findrunnable_in_bubble(&b) {
                    Found::G(g, slice) => ctx.execute(g, slice),
                    _ => panic!("the bubble's M came back without the woken G"),
                }
                let p = ctx.releasep().expect("held");
                sh.pidleput(p);
            })
        }
        waker.join().unwrap();
        drop(h);
        settle(&sh);
    });
}
