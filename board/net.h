// Boost.Beast and Asio under short names, for the board's server and client (private).
#pragma once

#include <boost/asio.hpp>
#include <boost/beast.hpp>

namespace wit::board {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
}  // namespace wit::board
