//! `ObjectStore` wrappers (the Ray worker's output ledger, the byte counters, convert's file
//! filter, the tests' fault injectors) each change one or two operations; `forward_to_inner!`
//! writes the others, passing them to `self.inner` unchanged.

/// Inside an `#[async_trait] impl ObjectStore for W`, where `W` has
/// `inner: Arc<dyn ObjectStore>`: each named required method, forwarded to `inner` unchanged.
/// The async ones are written as `async_trait` writes them (boxed futures, its lifetimes):
/// the attribute runs before this macro is expanded, so it never sees them.
///
/// Only the trait's required methods: the provided ones (`get_ranges`, `list_with_offset`,
/// `rename_opts` …) keep their defaults, which call back into the wrapper, so what a wrapper
/// changes (counting a GET, filtering a listing) holds for them too.
#[macro_export]
macro_rules! forward_to_inner {
    ($($method:ident),+ $(,)?) => { $( $crate::forward_to_inner!(@ $method); )+ };
    (@ put_opts) => {
        fn put_opts<'life0, 'life1, 'async_trait>(
            &'life0 self,
            location: &'life1 ::object_store::path::Path,
            payload: ::object_store::PutPayload,
            opts: ::object_store::PutOptions,
        ) -> $crate::forward_to_inner!(@future 'async_trait, ::object_store::PutResult)
        where
            'life0: 'async_trait,
            'life1: 'async_trait,
            Self: 'async_trait,
        {
            self.inner.put_opts(location, payload, opts)
        }
    };
    (@ put_multipart_opts) => {
        fn put_multipart_opts<'life0, 'life1, 'async_trait>(
            &'life0 self,
            location: &'life1 ::object_store::path::Path,
            opts: ::object_store::PutMultipartOptions,
        ) -> $crate::forward_to_inner!(@future 'async_trait, Box<dyn ::object_store::MultipartUpload>)
        where
            'life0: 'async_trait,
            'life1: 'async_trait,
            Self: 'async_trait,
        {
            self.inner.put_multipart_opts(location, opts)
        }
    };
    (@ get_opts) => {
        fn get_opts<'life0, 'life1, 'async_trait>(
            &'life0 self,
            location: &'life1 ::object_store::path::Path,
            options: ::object_store::GetOptions,
        ) -> $crate::forward_to_inner!(@future 'async_trait, ::object_store::GetResult)
        where
            'life0: 'async_trait,
            'life1: 'async_trait,
            Self: 'async_trait,
        {
            self.inner.get_opts(location, options)
        }
    };
    (@ delete_stream) => {
        fn delete_stream(
            &self,
            locations: ::futures::stream::BoxStream<
                'static,
                ::object_store::Result<::object_store::path::Path>,
            >,
        ) -> ::futures::stream::BoxStream<'static, ::object_store::Result<::object_store::path::Path>>
        {
            self.inner.delete_stream(locations)
        }
    };
    (@ list) => {
        fn list(
            &self,
            prefix: Option<&::object_store::path::Path>,
        ) -> ::futures::stream::BoxStream<'static, ::object_store::Result<::object_store::ObjectMeta>>
        {
            self.inner.list(prefix)
        }
    };
    (@ list_with_delimiter) => {
        fn list_with_delimiter<'life0, 'life1, 'async_trait>(
            &'life0 self,
            prefix: Option<&'life1 ::object_store::path::Path>,
        ) -> $crate::forward_to_inner!(@future 'async_trait, ::object_store::ListResult)
        where
            'life0: 'async_trait,
            'life1: 'async_trait,
            Self: 'async_trait,
        {
            self.inner.list_with_delimiter(prefix)
        }
    };
    (@ copy_opts) => {
        fn copy_opts<'life0, 'life1, 'life2, 'async_trait>(
            &'life0 self,
            from: &'life1 ::object_store::path::Path,
            to: &'life2 ::object_store::path::Path,
            options: ::object_store::CopyOptions,
        ) -> $crate::forward_to_inner!(@future 'async_trait, ())
        where
            'life0: 'async_trait,
            'life1: 'async_trait,
            'life2: 'async_trait,
            Self: 'async_trait,
        {
            self.inner.copy_opts(from, to, options)
        }
    };
    // The lifetime comes from the caller's arm, where it is declared.
    (@future $l:lifetime, $t:ty) => {
        ::std::pin::Pin<
            Box<dyn ::std::future::Future<Output = ::object_store::Result<$t>> + Send + $l>,
        >
    };
}
