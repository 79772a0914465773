public import MBaaSCore
public import Testing

/// Runs `body` expecting an ``MBaaSCore/MBaaSError`` of `kind`, and returns it for more checks. Success, another kind
/// or another error type is recorded as a Swift Testing issue at the caller's line (and `nil` returned for the first
/// and the last).
///
/// ```swift
/// let e = await expectError(.notFound) { try await backend.get(className: "Memo", id: "gone") }
/// #expect(e?.message.contains("gone") == true)
/// ```
@discardableResult
public func expectError<T>(
    _ kind: MBaaSError.Kind, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> T
) async -> MBaaSError? {
    do {
        _ = try await body()
        Issue.record("expected \(kind), got success", sourceLocation: sourceLocation)
        return nil
    } catch let e as MBaaSError {
        #expect(e.kind == kind, "expected \(kind), got \(e)", sourceLocation: sourceLocation)
        return e
    } catch {
        Issue.record("expected MBaaSError \(kind), got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// Runs `body` and returns what it threw as an ``MBaaSCore/MBaaSError`` (another error wrapped by
/// ``MBaaSCore/MBaaSError/wrap(_:)``), or `nil` when it returned: for tests that check the error themselves.
public func thrownError(_ body: () async throws -> Void) async -> MBaaSError? {
    do { try await body(); return nil } catch { return MBaaSError.wrap(error) }
}
