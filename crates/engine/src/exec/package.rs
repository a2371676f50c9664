//! Ray job packages: zip archives uploaded to the cluster's GCS through the Jobs API
//! (`gcs://_ray_pkg_<hash>.zip`), unpacked by Ray on each node for the job's `working_dir`
//! and `py_modules`. Written here (deflate from flate2, already in the tree) because the archive
//! is two or three files; Unix modes are kept, so the worker binary stays executable.

use std::io::Write;

use flate2::Crc;
use flate2::write::DeflateEncoder;

/// One file of an archive.
pub struct Entry {
    /// Path inside the archive, `/`-separated.
    pub name: String,
    pub data: Vec<u8>,
    /// Unix mode bits (e.g. 0o755).
    pub mode: u32,
}

/// The package's name in the cluster: content-addressed, so an unchanged worker binary is
/// uploaded once per cluster.
pub fn package_name(content_hash: u64) -> String {
    format!("_ray_pkg_{content_hash:016x}.zip")
}

pub fn content_hash(parts: &[&[u8]]) -> u64 {
    use std::hash::Hasher;
    let mut h = twox_hash::XxHash64::with_seed(0x6c68_7261_7970_6b67);
    for p in parts {
        h.write(&(p.len() as u64).to_le_bytes());
        h.write(p);
    }
    h.finish()
}

/// A zip archive of `entries` (deflated; sizes and offsets below 4 GiB, no ZIP64).
pub fn zip(entries: &[Entry]) -> std::io::Result<Vec<u8>> {
    let too_big = || std::io::Error::other("a Ray package over 4 GiB is not supported");
    let mut out: Vec<u8> = Vec::new();
    let mut central: Vec<u8> = Vec::new();
    for e in entries {
        let mut crc = Crc::new();
        crc.update(&e.data);
        let mut enc = DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(&e.data)?;
        let packed = enc.finish()?;
        let offset = u32::try_from(out.len()).map_err(|_| too_big())?;
        let csize = u32::try_from(packed.len()).map_err(|_| too_big())?;
        let usize_ = u32::try_from(e.data.len()).map_err(|_| too_big())?;
        let name = e.name.as_bytes();
        let name_len = u16::try_from(name.len()).map_err(|_| too_big())?;
        // Local file header.
        out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        out.extend_from_slice(&20u16.to_le_bytes()); // version needed
        out.extend_from_slice(&0u16.to_le_bytes()); // flags
        out.extend_from_slice(&8u16.to_le_bytes()); // deflate
        out.extend_from_slice(&0u16.to_le_bytes()); // time
        out.extend_from_slice(&0x21u16.to_le_bytes()); // date: 1980-01-01
        out.extend_from_slice(&crc.sum().to_le_bytes());
        out.extend_from_slice(&csize.to_le_bytes());
        out.extend_from_slice(&usize_.to_le_bytes());
        out.extend_from_slice(&name_len.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes()); // extra
        out.extend_from_slice(name);
        out.extend_from_slice(&packed);
        // Central directory entry.
        central.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        central.extend_from_slice(&((3u16 << 8) | 20).to_le_bytes()); // made by: Unix
        central.extend_from_slice(&20u16.to_le_bytes());
        central.extend_from_slice(&0u16.to_le_bytes());
        central.extend_from_slice(&8u16.to_le_bytes());
        central.extend_from_slice(&0u16.to_le_bytes());
        central.extend_from_slice(&0x21u16.to_le_bytes());
        central.extend_from_slice(&crc.sum().to_le_bytes());
        central.extend_from_slice(&csize.to_le_bytes());
        central.extend_from_slice(&usize_.to_le_bytes());
        central.extend_from_slice(&name_len.to_le_bytes());
        central.extend_from_slice(&0u16.to_le_bytes()); // extra
        central.extend_from_slice(&0u16.to_le_bytes()); // comment
        central.extend_from_slice(&0u16.to_le_bytes()); // disk
        central.extend_from_slice(&0u16.to_le_bytes()); // internal attributes
        central.extend_from_slice(&((0o100000 | e.mode) << 16).to_le_bytes()); // regular file
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(name);
    }
    let cd_offset = u32::try_from(out.len()).map_err(|_| too_big())?;
    let cd_size = u32::try_from(central.len()).map_err(|_| too_big())?;
    let n = u16::try_from(entries.len()).map_err(|_| too_big())?;
    out.extend_from_slice(&central);
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(&cd_size.to_le_bytes());
    out.extend_from_slice(&cd_offset.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_archive_lists_its_entries_with_sizes_and_ends_with_the_directory() {
        let z = zip(&[
            Entry {
                name: "driver.py".into(),
                data: b"print('hi')\n".to_vec(),
                mode: 0o644,
            },
            Entry {
                name: "m/lakehealth".into(),
                data: vec![7u8; 10_000],
                mode: 0o755,
            },
        ])
        .unwrap();
        assert_eq!(&z[..4], &[0x50, 0x4b, 0x03, 0x04]);
        let eocd = &z[z.len() - 22..];
        assert_eq!(&eocd[..4], &[0x50, 0x4b, 0x05, 0x06]);
        assert_eq!(u16::from_le_bytes([eocd[10], eocd[11]]), 2);
        assert!(z.len() < 10_000, "deflated");
        assert_ne!(
            package_name(content_hash(&[b"a"])),
            package_name(content_hash(&[b"b"]))
        );
    }
}
