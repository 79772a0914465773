/// Every record matching a query, as an `AsyncSequence` that fetches one page at a time, only when iterated.
///
/// The sequence follows ``RecordPage/nextCursor`` from page to page and stops on a page with no cursor, an
/// empty page, or when `query.limit` records have been returned. Cancellation of the iterating task stops it
/// before the next request. Each iteration starts again from the first page.
///
/// ```swift
/// for try await record in backend.records(matching: Query("Memo").sorted("-money"), pageSize: 50) { ... }
/// ```
public struct RecordSequence: AsyncSequence, Sendable {
    public typealias Element = Record
    public typealias Fetch = @Sendable (Query) async throws -> RecordPage

    public let query: Query
    public let pageSize: Int?
    /// Whether the next page is requested as soon as a page arrives (``readingAhead()``).
    public private(set) var readsAhead = false
    private let fetch: Fetch

    public init(query: Query, pageSize: Int?, fetch: @escaping Fetch) {
        self.query = query
        self.pageSize = pageSize
        self.fetch = fetch
    }

    /// The same records, with each next page requested as soon as the page before it arrives, so that fetching and
    /// decoding page N+1 runs while the caller handles page N (on another core, or while waiting on a server).
    ///
    /// At most one page is read ahead: memory holds two pages. Errors arrive in order, when the page that failed is
    /// reached. A read-ahead request is cancelled when the iterating task is cancelled; one still in flight when the
    /// caller stops iterating early completes and is dropped, so use this where a sequence is read to its end.
    public func readingAhead() -> RecordSequence {
        var copy = self
        copy.readsAhead = true
        return copy
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(query: query, pageSize: pageSize, readsAhead: readsAhead, fetch: fetch)
    }

    /// Collects every record into an array.
    public func collect() async throws -> [Record] {
        var all: [Record] = []
        for try await r in self { all.append(r) }
        return all
    }

    public struct Iterator: AsyncIteratorProtocol {
        private var query: Query
        private let total: Int?
        private let pageSize: Int?
        private let readsAhead: Bool
        private let fetch: Fetch
        private var buffer: [Record] = []
        private var bufferIndex = 0
        private var delivered = 0
        private var finished = false
        /// The next page, requested when the current one arrived.
        private var ahead: Task<RecordPage, any Error>?
        /// How many pages were requested so far (for tests and progress reporting).
        public private(set) var pagesFetched = 0

        init(query: Query, pageSize: Int?, readsAhead: Bool, fetch: @escaping Fetch) {
            self.query = query
            self.total = query.limit
            self.pageSize = pageSize
            self.readsAhead = readsAhead
            self.fetch = fetch
        }

        /// The request for the page after `delivered` records.
        private func request(after delivered: Int) -> Query {
            var request = query
            var size = pageSize ?? query.limit
            if let total, let s = size { size = Swift.min(s, total - delivered) } else if let total { size = total - delivered }
            request.limit = size
            return request
        }

        public mutating func next() async throws -> Record? {
            if let total, delivered >= total { return nil }
            while bufferIndex >= buffer.count {
                if finished { return nil }
                if Task.isCancelled {
                    ahead?.cancel()
                    ahead = nil
                    throw CancellationError()
                }
                let page: RecordPage
                if let pending = ahead {
                    ahead = nil
                    page = try await withTaskCancellationHandler { try await pending.value } onCancel: { pending.cancel() }
                } else {
                    page = try await fetch(request(after: delivered))
                }
                pagesFetched += 1
                buffer = page.records
                bufferIndex = 0
                if let next = page.nextCursor, !page.records.isEmpty {
                    query.cursor = next
                    query.skip = nil
                } else {
                    finished = true
                }
                if buffer.isEmpty { return nil }
                if readsAhead, !finished {
                    let upcoming = request(after: delivered + buffer.count)
                    if upcoming.limit.map({ $0 > 0 }) ?? true {
                        let fetch = self.fetch
                        ahead = Task { try await fetch(upcoming) }
                    }
                }
            }
            defer { bufferIndex += 1; delivered += 1 }
            return buffer[bufferIndex]
        }
    }
}
