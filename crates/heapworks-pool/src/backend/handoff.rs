//! Handing a shared buffer to another process over a Unix-domain stream socket: the buffer's
//! descriptor travels as `SCM_RIGHTS` ancillary data (the kernel installs a new descriptor for
//! the same file in the receiver), its offset, length and pool id as 24 bytes beside it. The
//! receiver maps the very pages the sender's buffer uses; nothing is copied.
//!
//! Invariants: a message is exactly [`MESSAGE_BYTES`] bytes with exactly one descriptor, sent
//! by one `sendmsg`; the descriptor arrives with the message's first byte (a stream socket
//! never splits ancillary data from the byte it was sent with), so a receiver that got no
//! descriptor with the first byte never gets one. Received descriptors are close-on-exec.
//! Anything else (no descriptor, more than one, a message cut short) is a
//! [`PoolError::BadHandle`], and every descriptor received with it is closed.

use std::io::{IoSlice, IoSliceMut, Read};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;

use rustix::net::{
    recvmsg, sendmsg, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, ReturnFlags,
    SendAncillaryBuffer, SendAncillaryMessage, SendFlags,
};

use super::{SharedMapping, ShmHandle};
use crate::error::PoolError;

/// Bytes of a message: offset, length and pool id, each a little-endian `u64`.
const MESSAGE_BYTES: usize = 24;

/// A handle received from another process, with the descriptor this process got for it.
#[derive(Debug)]
pub struct ReceivedHandle {
    /// The handle, its `fd` renumbered to [`ReceivedHandle::fd`]'s.
    pub handle: ShmHandle,
    /// The received descriptor: closed when this value is dropped (a mapping made from it
    /// stays valid).
    pub fd: OwnedFd,
}

impl ReceivedHandle {
    /// Maps the received buffer (see [`SharedMapping::map`]).
    pub fn map(&self) -> Result<SharedMapping, PoolError> {
        SharedMapping::map(&self.handle)
    }
}

impl ShmHandle {
    /// Sends this handle over `socket`: its descriptor as `SCM_RIGHTS`, the rest as bytes. The
    /// descriptor must be open (the buffer alive) until the call returns; the receiver's copy
    /// then keeps the file alive on its own.
    pub fn send_over(&self, socket: &UnixStream) -> Result<(), PoolError> {
        if self.fd < 0 {
            return Err(PoolError::BadHandle {
                reason: format!("descriptor {} cannot be sent", self.fd),
            });
        }
        let mut message = [0u8; MESSAGE_BYTES];
        for (field, value) in
            message
                .chunks_exact_mut(8)
                .zip([self.offset, self.len as u64, self.pool])
        {
            field.copy_from_slice(&value.to_le_bytes());
        }
        // SAFETY: the descriptor is the caller's buffer's, open for the duration of this call
        // (the method's contract); it is only borrowed for `sendmsg`.
        let fd = unsafe { BorrowedFd::borrow_raw(self.fd) };
        let fds = [fd];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        let pushed = control.push(SendAncillaryMessage::ScmRights(&fds));
        debug_assert!(pushed, "the control buffer is sized for one descriptor");
        let sent = sendmsg(
            socket.as_fd(),
            &[IoSlice::new(&message)],
            &mut control,
            SendFlags::NOSIGNAL,
        )
        .map_err(|errno| os_error("sendmsg", self.len, errno))?;
        if sent != MESSAGE_BYTES {
            // The descriptor went with the first byte; the rest follows as plain bytes.
            let mut rest = socket;
            std::io::Write::write_all(&mut rest, &message[sent..]).map_err(|source| {
                PoolError::Os {
                    operation: "write",
                    len: self.len,
                    source,
                }
            })?;
        }
        Ok(())
    }

    /// Receives a handle sent by [`ShmHandle::send_over`] from `socket`, blocking until it
    /// arrives.
    pub fn receive_from(socket: &UnixStream) -> Result<ReceivedHandle, PoolError> {
        let mut message = [0u8; MESSAGE_BYTES];
        // Room for two descriptors, so that a sender who attached more than one is told apart
        // from one who attached exactly one (whose extra descriptors are closed below).
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let received = recvmsg(
            socket.as_fd(),
            &mut [IoSliceMut::new(&mut message)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        )
        .map_err(|errno| os_error("recvmsg", 0, errno))?;
        let mut fds: Vec<OwnedFd> = control
            .drain()
            .filter_map(|message| match message {
                RecvAncillaryMessage::ScmRights(fds) => Some(fds),
                _ => None,
            })
            .flatten()
            .collect();
        if received.flags.contains(ReturnFlags::CTRUNC) || fds.len() > 1 {
            return Err(bad("more than one descriptor came with the message"));
        }
        let Some(fd) = fds.pop() else {
            return Err(bad(if received.bytes == 0 {
                "the socket closed before a handle arrived"
            } else {
                "no descriptor came with the message"
            }));
        };
        let mut rest = socket;
        rest.read_exact(&mut message[received.bytes..])
            .map_err(|_| bad("the message was cut short"))?;
        let field = |index: usize| {
            let bytes = message[index * 8..index * 8 + 8].try_into();
            u64::from_le_bytes(bytes.unwrap_or_default())
        };
        let len = usize::try_from(field(1)).map_err(|_| bad("the length overflows usize"))?;
        Ok(ReceivedHandle {
            handle: ShmHandle {
                fd: fd.as_raw_fd(),
                offset: field(0),
                len,
                pool: field(2),
            },
            fd,
        })
    }
}

fn bad(reason: &str) -> PoolError {
    PoolError::BadHandle {
        reason: reason.to_string(),
    }
}

fn os_error(operation: &'static str, len: usize, errno: rustix::io::Errno) -> PoolError {
    PoolError::Os {
        operation,
        len,
        source: errno.into(),
    }
}
