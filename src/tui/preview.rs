//! One preview dialog for every action the user confirms (compaction and purge, conversion,
//! Iceberg compaction, vacuum): a background task plans the request, the dialog shows the plan
//! (or why there is none), and confirming or dismissing it yields a typed value the app carries
//! out. A new preview is one `PreviewKind` (its request, its plan, its start and discard effects,
//! its body) and one `Modal` variant.

use crate::tui::task_error::TaskError;
use std::fmt::Debug;

use super::action::Effect;
use super::app::Modal;
use super::view::preview_dialog::PreviewView;
use crate::engine::compact::budget::Throttle;
use crate::engine::compact::ordering::LayoutRequest;
use crate::engine::compact::plan::CompactionPlan;
use crate::engine::iceberg::compact::job::IceSummary;
use crate::engine::maintenance::vacuum::VacuumPlan;
use crate::engine::model::partition::PartitionValues;
use crate::engine::parquet_folder::convert::ConvertPlan;
use crate::engine::stats::skipping::SkippingHealth;

/// A preview: planning (`result` None), then the plan or why there is none; `running` once
/// confirmed while it stays open, and `outcome` when the work reports into the dialog.
#[derive(Debug)]
pub struct Preview<K: PreviewKind> {
    pub id: u64,
    pub table_uri: String,
    /// What was asked (partitions, catalog, ...).
    pub request: K::Request,
    pub result: Option<Result<Box<K::Plan>, TaskError>>,
    /// Confirmed: the work runs and the dialog stays (it cannot be dismissed meanwhile).
    pub running: bool,
    /// The work's summary line once it ran in the dialog, or why it failed.
    pub outcome: Option<Result<String, TaskError>>,
}

impl<K: PreviewKind> Preview<K> {
    pub fn new(id: u64, table_uri: String, request: K::Request) -> Self {
        Self {
            id,
            table_uri,
            request,
            result: None,
            running: false,
            outcome: None,
        }
    }

    /// The plan, once it came and if it could be made.
    pub fn plan(&self) -> Option<&K::Plan> {
        match &self.result {
            Some(Ok(p)) => Some(p),
            _ => None,
        }
    }

    /// Confirming starts the work: there is a plan with something to do, not yet run.
    pub fn startable(&self) -> bool {
        self.plan().is_some_and(K::has_work) && !self.running && self.outcome.is_none()
    }
}

/// What confirming a startable preview does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OnConfirm {
    /// The dialog stays open, running, and this effect runs the work; its outcome comes back
    /// into the dialog.
    RunInPlace(Effect),
    /// The dialog closes and the plan runs as a compaction job in the jobs panel.
    StartJob,
    /// The dialog closes and the vacuum runs as a maintenance job.
    StartVacuum,
}

/// One kind of preview.
pub trait PreviewKind: Sized + Debug {
    type Request: Debug;
    type Plan: Debug;
    /// Whether the plan has anything to do (confirming it starts something).
    fn has_work(plan: &Self::Plan) -> bool;
    /// What confirming does.
    fn on_confirm(p: &Preview<Self>) -> OnConfirm;
    /// The effect that makes the runner forget a plan that will not run (None: nothing is
    /// parked).
    fn discard(id: u64) -> Option<Effect>;
    /// The dialog as drawn.
    fn view(p: &Preview<Self>) -> PreviewView<'_>;
    /// This kind's preview in the open modal.
    fn of(m: &mut Modal) -> Option<&mut Preview<Self>>;
}

/// A preview of any kind, as the app's key handling and the view see it.
pub trait AnyPreview {
    fn startable(&self) -> bool;
    fn set_running(&mut self);
    fn on_confirm(&self) -> OnConfirm;
    /// Dismissing it: None while it runs (it stays); else the effect to forget its plan, if any.
    fn on_dismiss(&self) -> Option<Option<Effect>>;
    fn view(&self) -> PreviewView<'_>;
}

impl<K: PreviewKind> AnyPreview for Preview<K> {
    fn startable(&self) -> bool {
        Preview::startable(self)
    }
    fn set_running(&mut self) {
        self.running = true;
    }
    fn on_confirm(&self) -> OnConfirm {
        K::on_confirm(self)
    }
    fn on_dismiss(&self) -> Option<Option<Effect>> {
        (!self.running).then(|| K::discard(self.id))
    }
    fn view(&self) -> PreviewView<'_> {
        K::view(self)
    }
}

impl Modal {
    /// The open preview, whatever its kind.
    pub fn preview(&self) -> Option<&dyn AnyPreview> {
        Some(match self {
            Modal::Plan(p) => p,
            Modal::Vacuum(p) => p,
            Modal::Convert(p) => p,
            Modal::Iceberg(p) => p,
            Modal::Skipping(p) => p,
            Modal::Help { .. }
            | Modal::Filter
            | Modal::ConfirmCancel { .. }
            | Modal::ConfirmQuit { .. }
            | Modal::Why { .. } => {
                return None;
            }
        })
    }

    pub fn preview_mut(&mut self) -> Option<&mut dyn AnyPreview> {
        Some(match self {
            Modal::Plan(p) => p,
            Modal::Vacuum(p) => p,
            Modal::Convert(p) => p,
            Modal::Iceberg(p) => p,
            Modal::Skipping(p) => p,
            Modal::Help { .. }
            | Modal::Filter
            | Modal::ConfirmCancel { .. }
            | Modal::ConfirmQuit { .. }
            | Modal::Why { .. } => {
                return None;
            }
        })
    }
}

/// A compaction (or purge) of some partitions of a Delta table.
#[derive(Debug)]
pub struct Compaction;

#[derive(Debug)]
pub struct CompactionRequest {
    pub partitions: Vec<PartitionValues>,
    /// Which executor runs the job's bins.
    pub executor: String,
    /// A purge (every file with a deletion vector), not a compaction.
    pub purge: bool,
    /// The user chose full speed in the preview (`f`, as `--no-throttle`): the job ignores the
    /// writers' throttle.
    pub full_speed: bool,
    /// The order asked (`o`): the table's default unless typed.
    pub layout: LayoutRequest,
    /// The order being typed (`o` opened the input); None: not typing.
    pub order_text: Option<String>,
}

/// A compaction's plan and the pace it would start at.
#[derive(Debug, Clone)]
pub struct PlannedJob {
    pub plan: CompactionPlan,
    /// The throttle chosen from the table's writers (`janitor::throttle`); None: unbounded.
    pub throttle: Option<Throttle>,
}

impl PreviewKind for Compaction {
    type Request = CompactionRequest;
    type Plan = PlannedJob;
    fn has_work(p: &PlannedJob) -> bool {
        p.plan.bins > 0
    }
    fn on_confirm(_: &Preview<Self>) -> OnConfirm {
        OnConfirm::StartJob
    }
    fn discard(id: u64) -> Option<Effect> {
        Some(Effect::DiscardPlan { id })
    }
    fn view(p: &Preview<Self>) -> PreviewView<'_> {
        super::view::plan_dialog::view(p)
    }
    fn of(m: &mut Modal) -> Option<&mut Preview<Self>> {
        match m {
            Modal::Plan(p) => Some(p),
            _ => None,
        }
    }
}

/// Converting a Parquet folder to Delta (it runs in the dialog).
#[derive(Debug)]
pub struct Conversion;

impl PreviewKind for Conversion {
    type Request = ();
    type Plan = ConvertPlan;
    fn has_work(_: &ConvertPlan) -> bool {
        true
    }
    fn on_confirm(p: &Preview<Self>) -> OnConfirm {
        OnConfirm::RunInPlace(Effect::StartConvert { id: p.id })
    }
    fn discard(id: u64) -> Option<Effect> {
        Some(Effect::DiscardConvert { id })
    }
    fn view(p: &Preview<Self>) -> PreviewView<'_> {
        super::view::convert_dialog::view(p)
    }
    fn of(m: &mut Modal) -> Option<&mut Preview<Self>> {
        match m {
            Modal::Convert(p) => Some(p),
            _ => None,
        }
    }
}

/// An Iceberg compaction through the table's catalog (it runs in the dialog).
#[derive(Debug)]
pub struct IcebergCompaction;

#[derive(Debug)]
pub struct IcebergRequest {
    pub catalog: String,
    /// Partition labels (empty: the whole table).
    pub partitions: Vec<String>,
}

impl PreviewKind for IcebergCompaction {
    type Request = IcebergRequest;
    type Plan = IceSummary;
    fn has_work(s: &IceSummary) -> bool {
        !s.plan.bins.is_empty()
    }
    /// The same request as the dry run, run for real.
    fn on_confirm(p: &Preview<Self>) -> OnConfirm {
        OnConfirm::RunInPlace(Effect::StartIceberg {
            id: p.id,
            uri: p.table_uri.clone(),
            catalog: p.request.catalog.clone(),
            partitions: p.request.partitions.clone(),
        })
    }
    /// A dry run through the catalog parks nothing.
    fn discard(_: u64) -> Option<Effect> {
        None
    }
    fn view(p: &Preview<Self>) -> PreviewView<'_> {
        super::view::iceberg_dialog::view(p)
    }
    fn of(m: &mut Modal) -> Option<&mut Preview<Self>> {
        match m {
            Modal::Iceberg(p) => Some(p),
            _ => None,
        }
    }
}

/// The skipping panel: read-only (confirming does nothing), its plan the measure.
#[derive(Debug)]
pub struct Skipping;

/// What the skipping panel measures: the table's format (which statistics it reads), and the
/// partition selected when it opened (its depths are shown too).
#[derive(Debug, Clone)]
pub struct SkippingRequest {
    pub format: crate::engine::model::format::TableFormat,
    pub partition: Option<PartitionValues>,
}

impl PreviewKind for Skipping {
    type Request = SkippingRequest;
    type Plan = SkippingHealth;
    fn has_work(_: &SkippingHealth) -> bool {
        false
    }
    /// Never asked: nothing to start (`has_work`).
    fn on_confirm(p: &Preview<Self>) -> OnConfirm {
        OnConfirm::RunInPlace(Effect::MeasureSkipping {
            id: p.id,
            uri: p.table_uri.clone(),
            format: p.request.format,
        })
    }
    /// The measure parks nothing.
    fn discard(_: u64) -> Option<Effect> {
        None
    }
    fn view(p: &Preview<Self>) -> PreviewView<'_> {
        super::view::skipping_dialog::view(p)
    }
    fn of(m: &mut Modal) -> Option<&mut Preview<Self>> {
        match m {
            Modal::Skipping(p) => Some(p),
            _ => None,
        }
    }
}

/// A vacuum's dry run.
#[derive(Debug)]
pub struct Vacuum;

impl PreviewKind for Vacuum {
    type Request = ();
    type Plan = VacuumPlan;
    /// Confirming starts a job only when the dry run found something to delete.
    fn has_work(p: &VacuumPlan) -> bool {
        p.files_to_delete > 0
    }
    fn on_confirm(_: &Preview<Self>) -> OnConfirm {
        OnConfirm::StartVacuum
    }
    fn discard(id: u64) -> Option<Effect> {
        Some(Effect::DiscardVacuum { id })
    }
    fn view(p: &Preview<Self>) -> PreviewView<'_> {
        super::view::vacuum_dialog::view(p)
    }
    fn of(m: &mut Modal) -> Option<&mut Preview<Self>> {
        match m {
            Modal::Vacuum(p) => Some(p),
            _ => None,
        }
    }
}
