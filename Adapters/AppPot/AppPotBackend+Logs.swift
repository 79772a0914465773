import Foundation
public import MBaaSCore

/// Monitoring logs and device registration (reference A5, A10).
///
/// Logs the SDK way: ``bufferLog(_:level:)`` keeps lines on the device, and ``flushLogs()`` asks the server which
/// level it wants (`GET logLevel`; None, Error or Monitor) and sends only the lines at or above it, dropping the rest
/// (seed 000: "if the server's log level is None, nothing is sent and the logs are deleted"; the Android SDK flushes
/// every 600 s, `LOG_TIMER_INTERVAL`; when to flush is the app's choice). ``log(_:level:)`` sends one line at once.
///
/// Push: ``registerDeviceAndLogIn(username:password:deviceToken:deviceName:osType:)`` follows the documented order
/// (02.Authentication): anonymous token, then `POST devices` with it (161 "already registered" means continue with
/// that UDID), then log-in with `isPush: true` and the same UDID. The UDID is the URL's `device` option: give each
/// install its own, kept across launches (a shared one is "already registered" for every install after the first).
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

    /// The push flow in the documented order (see above); returns the session. `false` registration (161) is not
    /// an error.
    public func registerDeviceAndLogIn(username: String, password: String, deviceToken: String, deviceName: String,
                                       osType: String) async throws -> Session {
        let body = AppPotDeviceRegistration(deviceToken: deviceToken, deviceUDID: configuration.deviceUDID,
                                            deviceName: deviceName, osType: osType)
        do {
            try await call(.post, AppPotRoute.devices.segments, body: .json(body.json), token: .anonymous)
        } catch let error as MBaaSError where error.vendorCode == String(AppPotErrorCode.deviceAlreadyRegistered) {
            logger.debug("apppot device already registered; continuing with it", metadata: ["udid": "\(configuration.deviceUDID)"])
        }
        return try await logIn(username: username, password: password, isPush: true)
    }

    /// Keeps a log line on the device until ``flushLogs()``.
    public func bufferLog(_ message: String, level: AppPotLogLevel) {
        logBuffer.withLock { $0.append((level, message)) }
    }

    /// The lines waiting for ``flushLogs()``.
    public var bufferedLogCount: Int { logBuffer.withLock { $0.count } }

    /// Sends the buffered lines the server's level asks for (`GET logLevel`), oldest first, and empties the buffer.
    /// Returns how many were sent. A line that fails to send stays buffered with those after it.
    @discardableResult
    public func flushLogs() async throws -> Int {
        let (_, json) = try await call(.get, AppPotRoute.logLevel.segments, token: .userOrAnonymous)
        let serverLevel = try AppPotServerLogLevel(response: json)
        let lines = logBuffer.withLock { lines -> [(AppPotLogLevel, String)] in let all = lines; lines.removeAll(); return all }
        var sent = 0
        for (index, (level, message)) in lines.enumerated() where serverLevel.accepts(level) {
            do {
                try await call(.post, AppPotRoute.logs.segments, body: .json(level.body(message: message)), token: .userOrAnonymous)
                sent += 1
            } catch {
                let rest = lines[index...].filter { serverLevel.accepts($0.0) }
                logBuffer.withLock { $0.insert(contentsOf: rest, at: 0) }
                throw error
            }
        }
        return sent
    }

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
