public import Foundation
public import MBaaSCore

/// Which headers a recording keeps.
///
/// A header is kept when its lowercased name is in ``names`` or starts with one of ``prefixes``, and is not in
/// ``excluded``. Headers that are not kept never reach the cassette.
public struct HeaderSelection: Sendable, Hashable {
    public var names: Set<String>
    public var prefixes: [String]
    public var excluded: Set<String>

    public init(names: Set<String>, prefixes: [String] = [], excluded: Set<String> = []) {
        self.names = Set(names.map { $0.lowercased() })
        self.prefixes = prefixes.map { $0.lowercased() }
        self.excluded = Set(excluded.map { $0.lowercased() })
    }

    public func contains(_ name: String) -> Bool {
        let lower = name.lowercased()
        guard !excluded.contains(lower) else { return false }
        return names.contains(lower) || prefixes.contains { lower.hasPrefix($0) }
    }

    /// Adds names (e.g. `Authorization`, whose value the scrubber then replaces by placeholders).
    public func including(_ more: Set<String>) -> HeaderSelection {
        var copy = self
        copy.names.formUnion(more.map { $0.lowercased() })
        copy.excluded.subtract(more.map { $0.lowercased() })
        return copy
    }

    /// Content negotiation, preconditions, protocol headers (`X-…`) and `Authorization` (which the ``Scrubber``
    /// turns into placeholders that keep identities apart, so replay compares who is calling); not volatile
    /// headers, not `Cookie`. The selection for ``WireProfile/generic``; an adapter's is ``request(for:)``.
    public static let defaultRequest = request(for: .generic)

    /// What a client may read from a response: content type, location, retry timing, validators and protocol
    /// headers; not volatile headers, not `Set-Cookie`. The selection for ``WireProfile/generic``; an adapter's is
    /// ``response(for:)``.
    public static let defaultResponse = response(for: .generic)

    /// The request headers a recording of an adapter keeps: those of ``defaultRequest``, plus headers starting
    /// with one of the profile's ``WireProfile/capturedHeaderPrefixes``, minus its
    /// ``WireProfile/volatileHeaders``.
    public static func request(for profile: WireProfile) -> HeaderSelection {
        HeaderSelection(
            names: ["content-type", "accept", "if-match", "if-none-match", "range", "authorization"],
            prefixes: ["x-"] + profile.capturedHeaderPrefixes.sorted(),
            excluded: RequestMatcher.volatileHeaders(for: profile).union(["cookie", "proxy-authorization"]))
    }

    /// The response headers a recording of an adapter keeps: those of ``defaultResponse``, plus headers starting
    /// with one of the profile's ``WireProfile/capturedHeaderPrefixes``, minus its
    /// ``WireProfile/volatileHeaders``.
    public static func response(for profile: WireProfile) -> HeaderSelection {
        HeaderSelection(
            names: ["content-type", "location", "retry-after", "etag", "content-range", "last-modified",
                    "www-authenticate", "content-disposition"],
            prefixes: ["x-"] + profile.capturedHeaderPrefixes.sorted(),
            excluded: RequestMatcher.volatileHeaders(for: profile)
                .union(["set-cookie", "x-powered-by", "x-served-by", "x-cache"]))
    }
}

/// An ``HTTPTransport`` that forwards to a live transport and keeps each exchange for a ``Cassette``.
///
/// # Contract
/// - Every request goes to the wrapped transport unchanged; its response (or error) is returned unchanged.
/// - Each completed exchange is kept in memory, in completion order, with only the selected headers
///   (``requestHeaders``/``responseHeaders``). A request that fails without a response is not kept.
/// - A response header ``Interaction/factHeader`` (set by a simulator where it builds the answer) becomes the
///   exchange's ``Interaction/fact`` and is removed from the response before the client sees it.
/// - Who answered is measured, not declared: a response that identifies its server (``ServerIdentity``: the
///   emulator's `Server: mbaas-emulator/<version>` and ``ServerIdentity/emulatorHeader``, or a vendor's
///   `Server: product/version`) is noted in ``servers``, and the emulator's two headers are kept in the cassette
///   whatever ``responseHeaders`` says. ``cassette(name:adapter:provenance:recordedAt:backendURL:variables:)``
///   returns its provenance measured from those identities (``Provenance/measured(from:)``): a recording the
///   emulator answered is ``Provenance/Kind/simulated`` whatever kind the caller passed. In a
///   ``Provenance/Kind/recorded`` one, every exchange without a fact gets ``Interaction/captureFact(server:version:)`` (`[capture] PocketBase 0.40.6`).
/// - Nothing is written here: ``cassette(name:adapter:provenance:recordedAt:backendURL:variables:)`` returns the
///   recording **after** the ``Scrubber`` has replaced every secret, and only that value is ever written.
/// - `recordedAt` comes from the caller (its pinned clock), never from the system clock.
/// - Safe to call from many tasks at once.
public final class RecordingTransport: HTTPTransport, @unchecked Sendable {
    public let base: any HTTPTransport
    public let scrubber: Scrubber
    public let requestHeaders: HeaderSelection
    public let responseHeaders: HeaderSelection

    private let exchanges = Locked<[Interaction]>([])
    private let identities = Locked<[ServerIdentity]>([])

    public init(
        wrapping base: any HTTPTransport, scrubber: Scrubber = Scrubber(),
        requestHeaders: HeaderSelection = .defaultRequest, responseHeaders: HeaderSelection = .defaultResponse
    ) {
        self.base = base
        self.scrubber = scrubber
        self.requestHeaders = requestHeaders
        self.responseHeaders = responseHeaders
    }

    /// A recorder for an adapter's traffic: the header selections of its profile
    /// (``HeaderSelection/request(for:)``, ``HeaderSelection/response(for:)``) and, unless `scrubber` is given,
    /// ``Scrubber/init(profile:secrets:minimumLength:)`` with `secrets`.
    public convenience init(
        wrapping base: any HTTPTransport, profile: WireProfile, secrets: [(placeholder: String, value: String)] = [],
        scrubber: Scrubber? = nil
    ) {
        self.init(wrapping: base, scrubber: scrubber ?? Scrubber(profile: profile, secrets: secrets),
                  requestHeaders: .request(for: profile), responseHeaders: .response(for: profile))
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        var response = try await base.send(request)
        // A simulator names the fact an answer follows in a header; it goes to the cassette, not to the client.
        let fact = response.headers[Interaction.factHeader]
        response.headers[Interaction.factHeader] = nil
        let identity = ServerIdentity(headers: response.headers)
        let keepsEmulatorHeaders = identity?.isEmulator == true
        let responseHeaders = self.responseHeaders
        let interaction = Interaction(
            request: RecordedRequest(request, keepHeader: requestHeaders.contains),
            response: RecordedResponse(response, keepHeader: { name in
                // The evidence that the emulator answered stays in the cassette, whatever the selection.
                if keepsEmulatorHeaders,
                   name.caseInsensitiveCompare("Server") == .orderedSame
                    || name.caseInsensitiveCompare(ServerIdentity.emulatorHeader) == .orderedSame {
                    return true
                }
                return responseHeaders.contains(name)
            }), fact: fact)
        exchanges.withLock { $0.append(interaction) }
        if let identity {
            identities.withLock { if !$0.contains(identity) { $0.append(identity) } }
        }
        return response
    }

    /// The distinct server identities the responses stated so far, in the order first seen.
    public var servers: [ServerIdentity] { identities.withLock { $0 } }

    /// How many exchanges have been recorded.
    public var count: Int { exchanges.withLock { $0.count } }

    /// Forgets every exchange (e.g. between scenarios sharing one transport).
    public func reset() {
        exchanges.withLock { $0.removeAll() }
        identities.withLock { $0.removeAll() }
    }

    /// The scrubbed recording so far as a cassette, its provenance measured from the ``servers`` that answered
    /// (``Provenance/measured(from:)``).
    /// - Parameters:
    ///   - recordedAt: the time of the recording, from the caller's pinned clock (replays pin their clock to it).
    ///   - backendURL: the URL the client was opened with; its secrets are scrubbed like everything else.
    ///   - variables: non-secret values generated for this run (e.g. `run`), kept verbatim unless they contain a
    ///     secret.
    public func cassette(
        name: String, adapter: String, provenance: Provenance, recordedAt: Date, backendURL: String? = nil,
        variables: [String: String] = [:]
    ) -> Cassette {
        var interactions = exchanges.withLock { $0 }
        let measured = provenance.measured(from: servers)
        if measured.kind == .recorded {
            // A vendor's server answered: that capture is the fact of every exchange no simulator named.
            let fact = Interaction.captureFact(server: measured.server ?? adapter, version: measured.serverVersion)
            for i in interactions.indices where interactions[i].fact == nil { interactions[i].fact = fact }
        }
        let raw = Cassette(name: name, adapter: adapter, provenance: measured, recordedAt: recordedAt,
                           backendURL: backendURL, variables: variables, interactions: interactions)
        return scrubber.scrub(raw)
    }
}
