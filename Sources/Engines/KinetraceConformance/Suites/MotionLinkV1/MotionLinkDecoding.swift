import KinetraceWire

extension CaptureObservation.Datagram {
    /// The MotionLink v1 decode of the payload, for the cases that judge its fields.
    var decoded: Result<MotionLinkV1.Message, WireError> { MotionLinkV1.decodeResult(payload) }
}
