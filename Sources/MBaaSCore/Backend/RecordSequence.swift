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
    private let fetch: Fetch

    public init(query: Query, pageSize: Int?, fetch: @escaping Fetch) {
        self.query = query
        self.pageSize = pageSize
        self.fetch = fetch
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(query: query, pageSize: pageSize, fetch: fetch)
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
        private let fetch: Fetch
        private var buffer: [Record] = []
        private var bufferIndex = 0
        private var delivered = 0
        private var finished = false
        /// How many pages were requested so far (for tests and progress reporting).
        public private(set) var pagesFetched = 0

        init(query: Query, pageSize: Int?, fetch: @escaping Fetch) {
            self.query = query
            self.total = query.limit
            self.pageSize = pageSize
            self.fetch = fetch
        }

        public mutating func next() async throws -> Record? {
            if let total, delivered >= total { return nil }
            while bufferIndex >= buffer.count {
                if finished { return nil }
                try Task.checkCancellation()
                var request = query
                var size = pageSize ?? query.limit
                if let total, let s = size { size = Swift.min(s, total - delivered) } else if let total { size = total - delivered }
                request.limit = size
                let page = try await fetch(request)
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
            }
            defer { bufferIndex += 1; delivered += 1 }
            return buffer[bufferIndex]
        }
    }
}
