//! Entering and leaving the terminal. The terminal is restored on normal exit, on error (Drop)
//! and on panic (ratatui's panic hook restores before the message prints).

use anyhow::Result;
use ratatui::DefaultTerminal;

use super::app::App;
use super::view;

pub struct Terminal {
    inner: Option<DefaultTerminal>,
}

impl Terminal {
    pub fn enter() -> Result<Self> {
        let t = ratatui::try_init()?;
        // Over ratatui's hook: a panic caught while reading a table must not restore the
        // terminal under a running TUI.
        crate::engine::panic_guard::install_hook();
        Ok(Self { inner: Some(t) })
    }

    pub fn size(&self) -> Result<(u16, u16)> {
        let s = self
            .inner
            .as_ref()
            .map(|t| t.size())
            .transpose()?
            .unwrap_or_default();
        Ok((s.width, s.height))
    }

    pub fn draw(&mut self, app: &App) -> Result<()> {
        if let Some(t) = self.inner.as_mut() {
            t.draw(|f| view::draw(f, app))?;
        }
        Ok(())
    }

    pub fn leave(mut self) -> Result<()> {
        self.inner = None;
        ratatui::try_restore()?;
        Ok(())
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        if self.inner.take().is_some() {
            ratatui::restore();
        }
    }
}

#[cfg(unix)]
pub fn sigterm() -> Option<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok()
}

#[cfg(unix)]
pub async fn recv(s: &mut Option<tokio::signal::unix::Signal>) {
    match s {
        Some(s) => {
            s.recv().await;
        }
        None => std::future::pending().await,
    }
}

#[cfg(not(unix))]
pub fn sigterm() -> Option<()> {
    None
}

#[cfg(not(unix))]
pub async fn recv(_: &mut Option<()>) {
    std::future::pending().await
}
