//! Moving an attempt's files between this machine and a host: one ssh call each way on
//! the shared connection, a tar stream on its stdin or stdout (`tar` is on every host
//! crewmux can use; the tar format is POSIX pax/ustar).

use std::path::Path;

use super::ssh::{remote_line, SshLink, CALL_LIMIT};
use crate::error::{Error, Result};

/// Files of the local attempt folder that the host needs: the wrapper, the prompt and
/// the `[workspace] setup` script (when the worker has one).
const SHIPPED: [&str; 3] = ["launch.sh", "prompt.md", "setup.sh"];

/// Copy the attempt's wrapper and prompt from `local_dir` into `remote_dir` on the host,
/// creating it and `work_dir` (the attempt's working directory there).
///
/// # Errors
/// A local file cannot be read, or the ssh call fails (its stderr).
pub fn ship(link: &SshLink, local_dir: &Path, remote_dir: &Path, work_dir: &Path) -> Result<()> {
    let mut tar = tar::Builder::new(Vec::new());
    for name in SHIPPED {
        let path = local_dir.join(name);
        if path.exists() {
            tar.append_path_with_name(&path, name)
                .map_err(|e| Error::io(&path, e))?;
        }
    }
    let bytes = tar.into_inner().map_err(|e| Error::io(local_dir, e))?;
    let remote = format!(
        "mkdir -p {dir} {work} && tar -xf - -C {dir}",
        dir = remote_line(&[remote_dir.display().to_string()])?,
        work = remote_line(&[work_dir.display().to_string()])?,
    );
    link.run(&remote, Some(&bytes), CALL_LIMIT)?;
    Ok(())
}

/// Copy every file of `remote_dir` on the host into `local_dir` (output, `exit.json`,
/// the result), replacing what is there; folders inside are left on the host.
///
/// # Errors
/// The ssh call fails (the host cannot be reached), or a file cannot be written here.
pub fn fetch(link: &SshLink, remote_dir: &Path, local_dir: &Path) -> Result<()> {
    let dir = remote_line(&[remote_dir.display().to_string()])?;
    // Only plain files at the top: a wrapper's own subfolders are not the attempt's.
    let remote = format!("cd {dir} && find . -maxdepth 1 -type f ! -name '.*' | tar -cf - -T -");
    let out = link.run(&remote, None, CALL_LIMIT)?;
    unpack(&out.stdout, local_dir)
}

/// Write the plain files of a tar stream into `dir` (each replaced whole: a temporary
/// file renamed over it, so a reader never sees half a file), `exit.json` first.
fn unpack(bytes: &[u8], dir: &Path) -> Result<()> {
    let mut archive = tar::Archive::new(bytes);
    let entries = archive.entries().map_err(|e| Error::io(dir, e))?;
    let mut files = Vec::new();
    for entry in entries {
        let mut entry = entry.map_err(|e| Error::io(dir, e))?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let path = entry.path().map_err(|e| Error::io(dir, e))?.into_owned();
        // `./name` only: nothing may land outside the attempt folder.
        let Some(name) = path.file_name().filter(|_| {
            path.components().all(|c| {
                matches!(
                    c,
                    std::path::Component::CurDir | std::path::Component::Normal(_)
                )
            }) && path
                .components()
                .filter(|c| matches!(c, std::path::Component::Normal(_)))
                .count()
                == 1
        }) else {
            continue;
        };
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut entry, &mut data).map_err(|e| Error::io(&path, e))?;
        files.push((name.to_os_string(), data));
    }
    // `exit.json` lands first: the driver reads the output as it lands, and an exit marker
    // there must find its exit record already here (the record is trusted over the marker).
    files.sort_by_key(|(name, _)| name != "exit.json");
    for (name, data) in files {
        crate::store::write_replace(&dir.join(name), &data)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tar_stream_lands_as_whole_files_and_nothing_escapes_the_folder() {
        let mut tar = tar::Builder::new(Vec::new());
        let mut add = |name: &str, data: &[u8]| {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            tar.append_data(&mut h, name, data).unwrap();
        };
        add("./exit.json", b"{}");
        add("./output.log", b"hello\n");
        let bytes = tar.into_inner().unwrap();
        // A hand-made entry that climbs out (tar::Builder refuses `..` in names).
        let mut evil = bytes[..512].to_vec();
        evil[..100].fill(0);
        evil[..10].copy_from_slice(b"../escape\0");
        let mut h = tar::Header::from_byte_slice(&evil).clone();
        h.set_cksum();
        let mut stream = h.as_bytes().to_vec();
        stream.extend_from_slice(&bytes[512..1024]);
        stream.extend_from_slice(&bytes);

        let dir = tempfile::tempdir().unwrap();
        let inner = dir.path().join("attempt");
        std::fs::create_dir(&inner).unwrap();
        std::fs::write(inner.join("output.log"), "old").unwrap();
        unpack(&stream, &inner).unwrap();
        assert_eq!(std::fs::read(inner.join("exit.json")).unwrap(), b"{}");
        assert_eq!(std::fs::read(inner.join("output.log")).unwrap(), b"hello\n");
        assert!(!dir.path().join("escape").exists());
    }
}
