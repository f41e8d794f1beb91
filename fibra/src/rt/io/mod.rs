//! I/O readiness on fibra's runtime: the driver a runtime's workers turn
//! when they would sleep (`driver.rs`), each source's readiness slot
//! (`readiness.rs`) and the wrapper the socket types of `crate::net` are
//! built on (`source.rs`). `docs/io.md` describes the design.

mod driver;
mod readiness;
mod source;

pub(crate) use driver::Driver;
pub(crate) use readiness::{Direction, WaitKey};
pub(crate) use source::{IoSource, short_read};
