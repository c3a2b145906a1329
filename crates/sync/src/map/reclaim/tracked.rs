//! What a retired object carries: the [`Reclaim`] trait, and its [`Tracked`] state: nothing
//! outside loom; under loom, what the stand-in (`model.rs`) checks each access against.

#[cfg(loom)]
use crate::loom::{AtomicBool, Ordering::Relaxed, UnsafeCell};

/// An object that can be retired: it carries a [`Tracked`] (a zero-sized no-op outside loom).
pub(crate) trait Reclaim: Sized {
    /// The object's tracking state.
    #[cfg_attr(not(loom), allow(dead_code))] // only the loom stand-in marks objects
    fn tracked(&self) -> &Tracked;

    /// Frees a retired object, once no guard can see it: a box, unless the type says otherwise
    /// (an entry's inline slot, `entry.rs`).
    ///
    /// # Safety
    /// `ptr` was retired once and is called here once, when no guard that could see it lives;
    /// it is a `Box::into_raw` pointer unless the type's own `destroy` says what it is.
    unsafe fn destroy(ptr: *mut Self) {
        // SAFETY: per this function's contract, the only owner of a live box.
        drop(unsafe { Box::from_raw(ptr) });
    }
}

/// Loom's access tracking; nothing outside loom.
#[cfg(not(loom))]
#[derive(Debug, Default)]
pub(crate) struct Tracked;

#[cfg(not(loom))]
impl Tracked {
    #[inline(always)]
    pub(crate) fn new() -> Tracked {
        Tracked
    }

    #[inline(always)]
    pub(crate) fn access(&self) {}
}

/// Loom's view of one shared object: its construction (a loom cell) and whether EBR would
/// have freed it by now. `reclaimed` is a loom atomic (written and read `Relaxed`, so it
/// adds no synchronization): that makes "mark reclaimed" and "access" dependent operations,
/// so loom explores their interleavings, e.g. a read of a slot just after its reader unpinned.
#[cfg(loom)]
pub(crate) struct Tracked {
    constructed: UnsafeCell<()>,
    /// Set by the stand-in (`model.rs`) once EBR would have freed the object.
    pub(super) reclaimed: AtomicBool,
}

#[cfg(loom)]
impl Tracked {
    pub(crate) fn new() -> Tracked {
        Tracked { constructed: UnsafeCell::new(()), reclaimed: AtomicBool::new(false) }
    }

    /// Checks that the object is not reclaimed and that its construction happens-before
    /// this access.
    #[track_caller]
    pub(crate) fn access(&self) {
        assert!(!self.reclaimed.load(Relaxed), "sync.Map: access to an object after EBR would have freed it");
        self.constructed.with(|_| ());
    }
}
