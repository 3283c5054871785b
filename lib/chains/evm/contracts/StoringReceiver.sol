// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// A destination whose receive() writes storage, as a Safe multisig, a smart account or an
/// exchange's deposit contract does: a plain 21,000-gas transfer to it runs out of gas.
contract StoringReceiver {
	uint256 public received;
	uint256 public count;

	receive() external payable {
		received += msg.value;
		count += 1;
	}
}
