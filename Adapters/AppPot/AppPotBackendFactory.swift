import Foundation
public import MBaaSCore

/// Opens ``AppPotBackend``s from `apppot://` and `apppot+http://` URLs (see ``AppPotConfiguration``). Opening
/// sends nothing; when the URL names a user (`user=` with the password as the URL's secret), that user is logged
/// in by the first call that needs a session. The classes of a `schemas=FILE` option are declared when it opens
/// (``AppPotFieldTypes``): an unreadable file is `localIO`, a bad one `invalidRequest` naming the entry.
public struct AppPotBackendFactory: BackendFactory {
    public init() {}
    public var schemes: [String] { ["apppot"] }
    public var adapterName: String { "apppot" }
    /// The generic profile plus AppPot's session header, which has no `X-` prefix: `apppot-token` is secret and
    /// `apppot-…` headers are captured; the user token's members (`userTokens`, and the string `results` an
    /// anonymous-token answer carries before v4; see ``AppPotGeneration``) and `apppot-token` are token fields.
    public var wireProfile: WireProfile {
        WireProfile.generic.merging(WireProfile(
            secretHeaders: ["apppot-token"], tokenFields: ["apppot-token", "userTokens", "results"],
            capturedHeaderPrefixes: ["apppot-"]))
    }

    public func open(_ url: BackendURL, context: BackendContext) async throws -> any Backend {
        let backend = AppPotBackend(configuration: try AppPotConfiguration(url: url), context: context)
        try backend.declareSchemasFile()
        return backend
    }
}
