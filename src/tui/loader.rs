//! Runs the app's load effects as background tasks, one cancellation token per load.

use std::collections::HashMap;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::action::{Action, Effect};
use crate::engine::location::Location;
use crate::engine::open::{OpenOptions, open};

pub struct Loader {
    opts: OpenOptions,
    tx: mpsc::UnboundedSender<Action>,
    running: HashMap<u64, CancellationToken>,
}

impl Loader {
    pub fn new(opts: OpenOptions, tx: mpsc::UnboundedSender<Action>) -> Self {
        Self {
            opts,
            tx,
            running: HashMap::new(),
        }
    }

    pub fn run(&mut self, effect: Effect) {
        match effect {
            Effect::Load { id, uri } => {
                let token = CancellationToken::new();
                self.running.retain(|_, t| !t.is_cancelled());
                self.running.insert(id, token.clone());
                let opts = self.opts.clone();
                let tx = self.tx.clone();
                tokio::spawn(async move {
                    let progress_tx = tx.clone();
                    let progress = move |p| {
                        let _ = progress_tx.send(Action::Progress { load: id, progress: p });
                    };
                    let work = async {
                        let loc = Location::parse(&uri).map_err(|e| e.to_string())?;
                        open(&loc, &opts, &progress).await.map_err(|e| e.to_string())
                    };
                    tokio::select! {
                        _ = token.cancelled() => {}
                        result = work => {
                            let _ = tx.send(Action::Loaded { load: id, result });
                        }
                    }
                });
            }
            Effect::CancelLoad { id } => {
                if let Some(t) = self.running.remove(&id) {
                    t.cancel();
                }
            }
        }
    }

    pub fn cancel_all(&mut self) {
        for (_, t) in self.running.drain() {
            t.cancel();
        }
    }
}
