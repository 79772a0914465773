public import Foundation
public import MBaaSCore

/// An ``HTTPTransport`` that answers from a ``Cassette`` and never touches the network.
///
/// # Contract
/// - A request is answered by the first **unused** interaction that matches it under the rules of
///   ``RequestMatcher`` (method, path, query in any order, non-volatile and pinned headers, semantic body). Host,
///   scheme and port are never compared, so a cassette recorded against `127.0.0.1:54321` replays anywhere.
/// - Identical requests are served in recorded order, each interaction once (a 429-then-200 retry, or polling,
///   replays as recorded).
/// - Strict mode (the default): a request that matches nothing unused throws ``MBaaSError`` of kind
///   ``MBaaSError/Kind/transport`` whose message names the closest recorded interaction (`#index METHOD path`) and
///   the first difference (`query 'limit': expected "2", got "3"`), or says that the matching interaction was
///   already used. ``verifyAllUsed()`` throws, listing every interaction not served.
/// - Every request that matched nothing is remembered in ``misses`` (in both modes), so a caller can tell that a
///   miss happened even when the client swallowed the error it threw.
/// - Lenient mode (`strict: false`): when every matching interaction is used, the last one matched is served again
///   (for polling); a request that matches no interaction at all still throws, since there is nothing to answer
///   with; ``verifyAllUsed()`` does not throw.
/// - Placeholders in the cassette are replaced on construction (see ``Cassette/substituting(_:)``), so clients
///   replay with the dummy secrets the cassette's `backendURL` carries.
/// - Safe to call from many tasks at once (state is guarded by a lock).
public final class ReplayingTransport: HTTPTransport, @unchecked Sendable {
    /// The cassette being replayed, placeholders substituted.
    public let cassette: Cassette
    public let strict: Bool
    /// Lowercased header names the matcher ignores unless an interaction pins them.
    public let ignoredHeaders: Set<String>

    private let used: Locked<[Bool]>
    private let missLog = Locked<[String]>([])
    /// Each interaction's upper-cased method and decoded path, computed once: most interactions differ there, so
    /// the full comparison (query, headers, semantic body) runs only for the few that share both.
    private let routes: [Route]

    private struct Route {
        var method: String
        var path: String
    }

    /// - Parameters:
    ///   - cassette: the recording; its placeholders are replaced using `substitutions`.
    ///   - strict: see the type's contract.
    ///   - substitutions: placeholder values (`["<APPLICATION_KEY>": "..."]` or `["APPLICATION_KEY": "..."]`);
    ///     unnamed placeholders get ``Cassette/dummyValue(forPlaceholder:)``.
    ///   - ignoredHeaders: volatile headers never compared unless pinned: the adapter's
    ///     (``RequestMatcher/volatileHeaders(for:)``; ``init(cassette:profile:strict:substitutions:)`` takes them
    ///     from its profile). The default is generic HTTP names only.
    public init(
        cassette: Cassette, strict: Bool = true, substitutions: [String: String] = [:],
        ignoredHeaders: Set<String> = RequestMatcher.volatileHeaders
    ) {
        self.cassette = cassette.substituting(substitutions)
        self.strict = strict
        self.ignoredHeaders = Set(ignoredHeaders.map { $0.lowercased() })
        self.used = Locked(Array(repeating: false, count: cassette.interactions.count))
        self.routes = self.cassette.interactions.map { i in
            Route(method: i.request.method.uppercased(), path: i.request.path.removingPercentEncoding ?? i.request.path)
        }
    }

    /// Replays a cassette of an adapter, ignoring the volatile headers of its profile (usually
    /// `factory.wireProfile`).
    public convenience init(
        cassette: Cassette, profile: WireProfile, strict: Bool = true, substitutions: [String: String] = [:]
    ) {
        self.init(cassette: cassette, strict: strict, substitutions: substitutions,
                  ignoredHeaders: RequestMatcher.volatileHeaders(for: profile))
    }

    /// Loads a cassette file and replays it, ignoring the volatile headers of `profile`.
    public convenience init(
        contentsOf url: URL, strict: Bool = true, substitutions: [String: String] = [:], profile: WireProfile = .generic
    ) throws {
        self.init(cassette: try Cassette.load(from: url, substitutions: substitutions), profile: profile, strict: strict)
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        if Task.isCancelled { throw MBaaSError(.transport, "cancelled", underlying: CancellationError()) }
        let live = RequestMatcher.Live(request)
        let interactions = cassette.interactions
        let ignored = ignoredHeaders
        // Matching is pure; only the choice and the mark happen under the lock.
        let method = live.recorded.method.uppercased()
        let path = live.recorded.path.removingPercentEncoding ?? live.recorded.path
        let matching = interactions.indices.filter {
            routes[$0].method == method && routes[$0].path == path
                && RequestMatcher.differences(recorded: interactions[$0].request, live: live, ignoring: ignored).isEmpty
        }
        let strict = self.strict
        let chosen: Int? = used.withLock { used in
            if let i = matching.first(where: { !used[$0] }) {
                used[i] = true
                return i
            }
            if !strict, let i = matching.last { return i }
            return nil
        }
        if let chosen { return interactions[chosen].response.httpResponse }
        let error = unmatchedError(live, matching: matching)
        missLog.withLock { $0.append(error.message) }
        throw error
    }

    /// The requests that matched no unused interaction, in order, each described as its error said.
    public var misses: [String] { missLog.withLock { $0 } }

    /// Indices of interactions not served yet.
    public var unusedInteractions: [Int] { used.withLock { used in used.indices.filter { !used[$0] } } }

    /// How many distinct interactions have been served.
    public var usedCount: Int { used.withLock { $0.filter { $0 }.count } }

    /// Throws (in strict mode) when interactions were never served, listing each as `#index METHOD path`.
    public func verifyAllUsed() throws {
        let unused = unusedInteractions
        guard strict, !unused.isEmpty else { return }
        let list = unused.map { "#\($0) \(cassette.interactions[$0].summary)" }.joined(separator: ", ")
        throw MBaaSError(.transport,
            "cassette '\(cassette.name)': \(unused.count) of \(cassette.interactions.count) recorded interactions were not used: \(list)")
    }

    /// Marks every interaction unused again.
    public func reset() {
        used.withLock { $0 = Array(repeating: false, count: $0.count) }
        missLog.withLock { $0.removeAll() }
    }

    private func unmatchedError(_ live: RequestMatcher.Live, matching: [Int]) -> MBaaSError {
        let interactions = cassette.interactions
        let head = "cassette '\(cassette.name)': no unused recorded interaction matches \(live.summary)"
        if let i = matching.first {
            return MBaaSError(.transport,
                "\(head); #\(i) \(interactions[i].summary) matches but was already used (identical requests are served in recorded order, each once; \(matching.count) recorded)")
        }
        guard !interactions.isEmpty else { return MBaaSError(.transport, "\(head): the cassette has no interactions") }
        let usedNow = used.withLock { $0 }
        // Closest: fewest differing rules, weighting method and path highest; ties go to unused, then earliest.
        func cost(_ i: Int) -> (Int, Int, Int) {
            let r = interactions[i].request
            var c = RequestMatcher.differences(recorded: r, live: live, ignoring: ignoredHeaders).count
            if r.method.uppercased() != live.recorded.method.uppercased() { c += 8 }
            if (r.path.removingPercentEncoding ?? r.path) != (live.recorded.path.removingPercentEncoding ?? live.recorded.path) { c += 4 }
            return (c, usedNow[i] ? 1 : 0, i)
        }
        let best = interactions.indices.min { cost($0) < cost($1) }!
        let difference = RequestMatcher.differences(recorded: interactions[best].request, live: live, ignoring: ignoredHeaders)
            .first ?? "no difference"
        let state = usedNow[best] ? " (already used)" : ""
        return MBaaSError(.transport, "\(head); closest is #\(best) \(interactions[best].summary)\(state): \(difference)")
    }
}
