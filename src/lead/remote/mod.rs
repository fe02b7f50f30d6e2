//! The lead's part of SSH hosts: batches started on their host's thread
//! (`launch_remote`), attempts waiting for a host (`host_wait`), a host lost for good
//! (`hosts`) and ended attempts' work fetched back (`work_back`).

pub(in crate::lead) mod host_wait;
pub(in crate::lead) mod hosts;
pub(in crate::lead) mod launch_remote;
pub(in crate::lead) mod work_back;
