import Foundation
import MBaaSAppPot
import MBaaSConformance
import MBaaSCore
import MBaaSKii
import MBaaSLocal
import MBaaSNCMB
import MBaaSPocketBase
import MBaaSReplay
import Testing

/// The committed cassettes were recorded and authored while MBaaSReplay held one list of every vendor's headers
/// and fields (issue #14 moved them into each adapter's ``WireProfile``). For each adapter, its profile must
/// capture, ignore and scrub every header it sends or receives exactly as those lists did, so that cassettes
/// replay unchanged and re-recording writes the same files.
@Suite struct WireProfileCompatibilityTests {
    /// The neutral lists as they were before the move, lowercased. Kept only for this comparison.
    enum Legacy {
        static let secretHeaders: Set<String> = Set([
            "Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie",
            "X-NCMB-Application-Key", "X-NCMB-Signature", "X-NCMB-Apps-Session-Token", "X-Kii-AppKey", "X-Kii-AppID",
            "X-Parse-REST-API-Key", "X-Parse-Master-Key", "X-Parse-Session-Token", "X-Parse-Application-Id",
            "X-Parse-Client-Key", "apppot-token", "X-API-Key", "X-Auth-Token", "X-Access-Token",
        ].map { $0.lowercased() })
        static let tokenKeys: Set<String> = [
            "sessionToken", "token", "access_token", "accessToken", "refresh_token", "refreshToken", "apppot-token",
            "authToken", "id_token", "idToken", "userToken", "_accessToken", "session_token",
        ]
        static let volatileHeaders: Set<String> = [
            "date", "user-agent", "content-length", "host", "connection", "accept-encoding", "transfer-encoding",
            "expect", "keep-alive", "x-ncmb-timestamp", "x-ncmb-signature", "x-ncmb-sdk-version", "x-ncmb-os-version",
            "x-ncmb-response-signature", "x-kii-sdk", "x-parse-client-version", "x-parse-request-id",
            "x-parse-installation-id", "x-request-id", "x-amzn-trace-id", "idempotency-key", "x-idempotency-key",
        ]
        static let request = HeaderSelection(
            names: ["content-type", "accept", "if-match", "if-none-match", "range", "authorization"],
            prefixes: ["x-", "apppot-"], excluded: volatileHeaders.union(["cookie", "proxy-authorization"]))
        static let response = HeaderSelection(
            names: ["content-type", "location", "retry-after", "etag", "content-range", "last-modified",
                    "www-authenticate", "content-disposition"],
            prefixes: ["x-", "apppot-"],
            excluded: volatileHeaders.union(["set-cookie", "x-powered-by", "x-served-by", "x-cache"]))
    }

    static let fixtures = ConformanceFixtures(root: ConformanceSuite.bundledFixtures)

    /// Header names any adapter's traffic may carry, besides its own.
    static let standardHeaders = [
        "Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie", "Content-Type", "Accept", "If-Match",
        "If-None-Match", "Range", "Date", "User-Agent", "Content-Length", "Host", "Connection", "Accept-Encoding",
        "Transfer-Encoding", "Expect", "Keep-Alive", "X-Request-Id", "X-Amzn-Trace-Id", "Idempotency-Key",
        "Location", "Retry-After", "ETag", "Content-Range", "Last-Modified", "WWW-Authenticate", "Content-Disposition",
        "X-Powered-By", "X-Served-By", "X-Cache", "X-API-Key", "X-Auth-Token", "X-Access-Token", "Server",
    ]

    struct Case: Sendable, CustomTestStringConvertible {
        var adapter: String
        var factory: any BackendFactory
        /// The headers the adapter's protocol defines (sent, received, or sent by the vendor's SDKs).
        var own: [String]
        var testDescription: String { adapter }
    }

    static let cases: [Case] = [
        Case(adapter: "ncmb", factory: NCMBBackendFactory(), own: [
            NCMBSigner.Header.applicationKey, NCMBSigner.Header.timestamp, NCMBSigner.Header.signature,
            NCMBSigner.Header.sessionToken, NCMBSigner.Header.responseSignature, "X-NCMB-SDK-Version",
            "X-NCMB-OS-Version",
        ]),
        Case(adapter: "kii", factory: KiiBackendFactory(),
             own: ["X-Kii-AppID", "X-Kii-AppKey", "X-Kii-SDK", "X-HTTP-Method-Override"]),
        Case(adapter: "apppot", factory: AppPotBackendFactory(), own: ["apppot-token"]),
        Case(adapter: "pocketbase", factory: PocketBaseBackendFactory(),
             own: ["X-XSS-Protection", "X-Content-Type-Options", "X-Frame-Options"]),
        Case(adapter: "local", factory: LocalBackendFactory(), own: []),
    ]

    /// Every header name in an adapter's committed cassettes (requests, responses, pins).
    static func cassetteHeaders(_ adapter: String) throws -> Set<String> {
        var names = Set<String>()
        let dirs = [fixtures.cassettes(for: adapter), fixtures.root.appendingPathComponent("CLICassettes/\(adapter)")]
        for dir in dirs {
            for file in SecretScanner.cassetteFiles(under: dir) {
                let c = try Cassette(json: JSON.parse(Data(contentsOf: file)))
                for i in c.interactions {
                    names.formUnion(i.request.headers.names)
                    names.formUnion(i.request.pinnedHeaders)
                    names.formUnion(i.response.headers.names)
                }
            }
        }
        return names
    }

    @Test(arguments: cases)
    func headersAreCapturedIgnoredAndScrubbedAsBefore(_ c: Case) throws {
        let profile = c.factory.wireProfile
        let fromCassettes = try Self.cassetteHeaders(c.adapter)
        if c.adapter != "local" { #expect(!fromCassettes.isEmpty, "no cassettes for \(c.adapter)") }
        let request = HeaderSelection.request(for: profile), response = HeaderSelection.response(for: profile)
        let ignored = RequestMatcher.volatileHeaders(for: profile)
        for name in Set(Self.standardHeaders + c.own).union(fromCassettes) {
            let lower = name.lowercased()
            #expect(request.contains(name) == Legacy.request.contains(name), "request capture of \(name)")
            #expect(response.contains(name) == Legacy.response.contains(name), "response capture of \(name)")
            #expect(ignored.contains(lower) == Legacy.volatileHeaders.contains(lower), "replay ignoring \(name)")
            #expect(profile.isSecretHeader(name) == Legacy.secretHeaders.contains(lower), "secret header \(name)")
            #expect(Scrubber(profile: profile).secretHeaders.contains { $0.lowercased() == lower }
                        == Legacy.secretHeaders.contains(lower), "scrubbed header \(name)")
        }
        // Token fields: every name the common list had, but another vendor's header name.
        #expect(Legacy.tokenKeys.subtracting(["apppot-token"]).isSubset(of: profile.tokenFields))
        #expect(Set(Scrubber.defaultSecretKeys).isSubset(of: profile.secretFields))
    }

    @Test func theRegistryOfTheCLIAdaptersNeedsAHostExceptForFilesAndDirectories() {
        #expect(NCMBBackendFactory().wireProfile.requiresHost)
        #expect(KiiBackendFactory().wireProfile.requiresHost)
        #expect(AppPotBackendFactory().wireProfile.requiresHost)
        #expect(PocketBaseBackendFactory().wireProfile.requiresHost)
        #expect(!LocalBackendFactory().wireProfile.requiresHost)
        #expect(!NCMBExportBackendFactory().wireProfile.requiresHost)
    }
}
