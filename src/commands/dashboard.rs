//! Driving a run with the dashboard (interim: headless until the dashboard lands).

use crate::domain::RunState;
use crate::driver::DriverOptions;
use crate::error::Result;
use crate::store::RunStore;

/// Drive `state` with the dashboard on this terminal.
pub fn drive_dashboard(store: RunStore, state: RunState, opts: DriverOptions) -> Result<i32> {
    super::drive::drive_headless(store, state, opts)
}
