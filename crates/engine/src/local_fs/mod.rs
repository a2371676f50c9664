//! A local table's deletes: never through a symbolic link, never outside the table's folder,
//! decided at the moment of the delete (`beneath`), for every store `Location` opens on a
//! local disk (`store`).

pub mod beneath;
mod store;

pub use store::ConfinedDeletes;

/// The refusal behind a store's delete error, when a local delete was refused (a link in the
/// path, or a path outside the folder): permanent while the table stays so, unlike a failure
/// worth retrying.
pub fn refusal(e: &object_store::Error) -> Option<&beneath::BeneathError> {
    let object_store::Error::Generic { source, .. } = e else {
        return None;
    };
    source
        .downcast_ref::<beneath::BeneathError>()
        .filter(|b| !matches!(b, beneath::BeneathError::Io { .. }))
}
