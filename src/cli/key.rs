//! `lakehealth key`: the installation key that seals job records (`engine::sealed`). It shows
//! where the key comes from and the ids of the keys accepted, never a key; `rotate` turns the
//! key file's key into the previous one (still accepted) and seals with a new one.

use anyhow::{Context, Result};

use super::args::{KeyAction, KeyArgs};
use crate::engine::sealed::{self, KEY_ENV, PREVIOUS_KEY_ENV};

/// Where this process's key comes from, in words.
fn source(from_config: bool) -> String {
    if std::env::var_os(KEY_ENV).is_some() {
        return format!("${KEY_ENV}");
    }
    if from_config {
        return "the config's [trust] key".into();
    }
    match sealed::key_file() {
        Some(p) => p.display().to_string(),
        None => "none".into(),
    }
}

pub fn run(args: KeyArgs, s: &super::run::Settings) -> Result<()> {
    let from_config = s.config.trust.key.is_some();
    match args.action.unwrap_or(KeyAction::Show) {
        KeyAction::Show => {
            let ring = sealed::keyring().context("the installation key")?;
            crate::outln!("key source: {}", source(from_config));
            let ids = ring.ids();
            crate::outln!("sealing key id: {}", ids.first().map_or("", String::as_str));
            if let Some(previous) = ids.get(1) {
                crate::outln!("previous key id (still accepted): {previous}");
            }
            Ok(())
        }
        KeyAction::Rotate => {
            if std::env::var_os(KEY_ENV).is_some() {
                anyhow::bail!(
                    "the key comes from ${KEY_ENV}: rotate it there (the current key to \
                     ${PREVIOUS_KEY_ENV}, a new one to ${KEY_ENV})"
                );
            }
            if from_config {
                anyhow::bail!(
                    "the key comes from the config's [trust] key: rotate it there (the current \
                     key to previous_key, a new one to key)"
                );
            }
            let file = sealed::key_file()
                .context("no data directory holds a key file: set $LAKEHEALTH_KEY")?;
            let (new, old) = sealed::rotate_key_file(&file)
                .with_context(|| format!("rotating {}", file.display()))?;
            crate::outln!("sealing key id: {new}");
            crate::outln!("previous key id (still accepted until the next rotation): {old}");
            Ok(())
        }
    }
}
