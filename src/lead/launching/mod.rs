//! Starting attempts: each attempt's folder, packaged prompt, wrapper and credential
//! (`prepare`, `creds`, `upstream`, `failures`), whether it continues a conversation
//! (`resume`), and the batches handed to the backend off the
//! loop (`launch`, `launch_thread`).

pub(in crate::lead) mod creds;
pub(in crate::lead) mod failures;
pub(in crate::lead) mod fence;
pub(in crate::lead) mod launch;
pub(in crate::lead) mod launch_thread;
pub(in crate::lead) mod prepare;
pub(in crate::lead) mod resume;
pub(in crate::lead) mod upstream;
