import Foundation
import MBaaSCore

/// Monitoring logs and device registration (reference A5, A10).
extension AppPotBackend {
    /// Sends a log line to the app's monitoring log (`POST logs {"message","logLevel"}`), with the user token when
    /// logged in, else the anonymous token.
    public func log(_ message: String, level: AppPotLogLevel) async throws {
        try await call(.post, AppPotRoute.logs.segments, body: .json(level.body(message: message)), token: .userOrAnonymous)
    }

    /// A monitoring log line (the AppPot SDKs' `logMonitor`).
    public func logMonitor(_ message: String) async throws { try await log(message, level: .monitor) }

    /// An error log line (the AppPot SDKs' `logError`).
    public func logError(_ message: String) async throws { try await log(message, level: .error) }

    /// Registers this device (the URL's `device` UDID) for push (`POST devices`). Returns `false` when the server
    /// answers that it is already registered (errCode 161), which the docs say to treat as success.
    @discardableResult
    public func registerDevice(deviceToken: String, deviceName: String, osType: String) async throws -> Bool {
        let body = AppPotDeviceRegistration(deviceToken: deviceToken, deviceUDID: configuration.deviceUDID,
                                            deviceName: deviceName, osType: osType)
        do {
            try await call(.post, AppPotRoute.devices.segments, body: .json(body.json), token: .userOrAnonymous)
            return true
        } catch let error as MBaaSError where error.vendorCode == String(AppPotErrorCode.deviceAlreadyRegistered) {
            return false
        }
    }
}
