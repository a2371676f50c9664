//! Entering and leaving the terminal. The terminal is restored on normal exit, on error (Drop)
//! and on panic (ratatui's panic hook restores before the message prints). The mouse is
//! captured while the TUI runs and released on each of those paths, first: a shell left with
//! mouse reporting on prints escape codes for every move.

use std::io::Write;

use anyhow::Result;
use crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use ratatui::DefaultTerminal;

use super::app::App;
use super::view;

pub struct Terminal {
    inner: Option<DefaultTerminal>,
}

impl Terminal {
    pub fn enter() -> Result<Self> {
        let t = ratatui::try_init()?;
        release_mouse_on_panic();
        let mut out = std::io::stdout();
        crossterm::execute!(out, EnableMouseCapture)?;
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
        release_mouse();
        ratatui::try_restore()?;
        Ok(())
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        if self.inner.take().is_some() {
            release_mouse();
            ratatui::restore();
        }
    }
}

/// Stops mouse reporting (best effort: the terminal may be gone).
pub fn release_mouse() {
    let mut out = std::io::stdout();
    let _ = crossterm::execute!(out, DisableMouseCapture);
    let _ = out.flush();
}

/// Chains a panic hook that releases the mouse before the one installed before it (ratatui's,
/// which restores the screen, then prints the panic).
fn release_mouse_on_panic() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        release_mouse();
        previous(info);
    }));
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
