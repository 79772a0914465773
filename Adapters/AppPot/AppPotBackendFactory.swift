import Foundation
import MBaaSCore

/// Opens ``AppPotBackend``s from `apppot://` and `apppot+http://` URLs (see ``AppPotConfiguration``). When the
/// URL names a user (`user=` with the password as the URL's secret), the backend is logged in before it is
/// returned.
public struct AppPotBackendFactory: BackendFactory {
    public init() {}
    public var schemes: [String] { ["apppot"] }
    public var adapterName: String { "apppot" }

    public func open(_ url: BackendURL, context: BackendContext) async throws -> any Backend {
        let backend = AppPotBackend(configuration: try AppPotConfiguration(url: url), context: context)
        if let user = backend.configuration.loginUser, let password = backend.configuration.loginPassword {
            _ = try await backend.logIn(username: user, password: password)
        }
        return backend
    }
}
